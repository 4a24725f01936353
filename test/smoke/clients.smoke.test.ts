// The generated Python and Go clients against the real server (`npm run test:smoke`): the
// harness seeds a workspace through the APIs (Messaging key and a contact, Login app, Connect
// client and an authorization code from the real consent flow with PKCE), runs each smoke
// program with that input, and checks in the server that what the program reports happened.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '../helper.js';
import { bearer, createKey, signUp } from '../unit/account/support.js';
import { Browser, REDIRECT, codeFor, createClient, exchange } from '../unit/connect/oauth/support.js';

const root = join(import.meta.dirname, '..', '..');
const python = join(root, '.tools', 'python', 'bin', 'python');
const goBinary = join(root, '.tmp', 'smoke-go');
const goEnv = { GOTOOLCHAIN: 'local', GOFLAGS: `${process.env.GOFLAGS ?? ''} -modcacherw`.trim() };

let app: FastifyInstance;
let baseUrl: string;

/**
 * Runs a command to its end without blocking the event loop (the server under test runs in
 * this process); the output goes into assertion messages.
 */
function run(cmd: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  return new Promise<{ status: number | null; stdout: string; stderr: string; output: string }>((resolve) => {
    execFile(cmd, args, { cwd: options.cwd ?? root, env: { ...process.env, ...options.env }, encoding: 'utf8', timeout: 300_000 }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ status, stdout, stderr, output: `${stdout}${stderr}${error && status === null ? String(error) : ''}` });
    });
  });
}

beforeAll(async () => {
  // Both generators skip their work when clients/ matches generated/ (a stamp), so this is quick when cached.
  for (const script of ['scripts/clients-python.mjs', 'scripts/clients-go.mjs']) {
    const res = await run(process.execPath, [script]);
    expect(res.status, res.output).toBe(0);
  }
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const built = await run('go', ['build', '-o', goBinary, '.'], { cwd: join(root, 'test', 'smoke', 'go'), env: goEnv });
  expect(built.status, built.output).toBe(0);
  // The consent flow and both programs make many public requests from one address.
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '10000' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 600_000);

/** A workspace seeded through the APIs, and the environment a smoke program reads. */
async function seed() {
  const owner = await signUp(app);
  const key = await createKey(app, owner.token, { name: 'smoke' });
  const contact = await app.inject({
    method: 'POST',
    url: '/api/contacts',
    headers: { 'x-api-key': key.secret },
    payload: { contact_no: '+14155550123', name: 'Ada Smoke' },
  });
  expect(contact.statusCode, contact.body).toBe(201);
  const loginApp = await app.inject({ method: 'POST', url: '/api/login/apps', headers: bearer(owner.token), payload: { name: 'Smoke Shop' } });
  expect(loginApp.statusCode, loginApp.body).toBe(201);
  const client = await createClient(app, owner);
  const browser = new Browser(app);
  await browser.signIn(owner.email);
  const { code, verifier } = await codeFor(browser, client);
  const env = {
    CHATAPP_BASE_URL: baseUrl,
    MESSAGING_API_KEY: key.secret,
    LOGIN_API_KEY: loginApp.json().api_key as string,
    CONNECT_CLIENT_ID: client.client_id,
    CONNECT_CLIENT_SECRET: client.client_secret!,
    CONNECT_CODE: code,
    CONNECT_CODE_VERIFIER: verifier,
    CONNECT_REDIRECT_URI: REDIRECT,
  };
  return { owner, client, code, verifier, env };
}

type Seeded = Awaited<ReturnType<typeof seed>>;

/** What the server must show after a successful run that printed `stdout`. */
async function expectServerState(seeded: Seeded, stdout: string) {
  expect(stdout).toContain('listed 1 contact(s): +14155550123');
  // The session the program started exists for the Login app's key and is pending.
  const sessionId = /login: started (ls_\w+)/.exec(stdout)?.[1];
  expect(sessionId, stdout).toBeDefined();
  const status = await app.inject({ method: 'GET', url: `/v1/auth/chatapp/status/${sessionId}`, headers: { 'x-api-key': seeded.env.LOGIN_API_KEY } });
  expect(status.statusCode, status.body).toBe(200);
  expect(status.json()).toMatchObject({ sessionId, status: 'pending' });
  // The exchange happened: the grant is active and the code is spent (a second use is invalid_grant).
  expect(stdout).toMatch(/ACCESS_TOKEN_PREFIX=cat_/);
  const grants = await app.inject({ method: 'GET', url: '/api/connect/grants', headers: bearer(seeded.owner.token) });
  expect(grants.json().data).toMatchObject([{ client_id: seeded.client.client_id, status: 'active' }]);
  const reuse = await exchange(app, seeded.client, seeded.code, seeded.verifier);
  expect(reuse.statusCode).toBe(400);
  expect(reuse.json().error).toBe('invalid_grant');
}

describe('Python client (openapi-python-client)', () => {
  it('every generated module imports (the generator can emit code that does not)', async () => {
    const script = `import importlib, pkgutil
for name in ["chatapp_connect", "chatapp_login", "chatapp_messaging"]:
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
print("imported")`;
    const res = await run(python, ['-c', script]);
    expect(res.status, res.output).toBe(0);
    expect(res.stdout).toContain('imported');
  });

  it('lists contacts, starts a login and reads it, exchanges a Connect code and calls with the token', async () => {
    const seeded = await seed();
    const res = await run(python, ['test/smoke/python/smoke.py'], { env: seeded.env });
    expect(res.status, res.output).toBe(0);
    expect(res.stdout).toContain('python smoke: OK');
    console.log(res.stdout);
    await expectServerState(seeded, res.stdout);
  });

  it('exits non-zero and names the step when the server refuses (a wrong Messaging key)', async () => {
    const seeded = await seed();
    const res = await run(python, ['test/smoke/python/smoke.py'], { env: { ...seeded.env, MESSAGING_API_KEY: 'mk_live_not_a_key' } });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('FAIL list contacts: HTTP 401');
  });
});

describe('Go client (oapi-codegen)', () => {
  it('lists contacts, starts a login and reads it, exchanges a Connect code and calls with the token', async () => {
    const seeded = await seed();
    const res = await run(goBinary, [], { env: seeded.env });
    expect(res.status, res.output).toBe(0);
    expect(res.stdout).toContain('go smoke: OK');
    console.log(res.stdout);
    await expectServerState(seeded, res.stdout);
  });

  it('exits non-zero and names the step when the server refuses (a spent code)', async () => {
    const seeded = await seed();
    expect((await exchange(app, seeded.client, seeded.code, seeded.verifier)).statusCode).toBe(200);
    const res = await run(goBinary, [], { env: seeded.env });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/FAIL token exchange: HTTP 400 .*invalid_grant/);
  });
});
