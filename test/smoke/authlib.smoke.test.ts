// Authlib's OpenID Connect client (Python, Authlib 1.9.6 in the venv .tools/authlib, made here
// when missing; CI makes it in its own step) against the running server: discovery, the
// authorization URL with PKCE S256, state and nonce, the code exchange with HTTP Basic, ID token
// validation with Authlib's JOSE and userinfo (test/smoke/oidc/authlib_oidc.py, unchanged). The
// browser's part between the authorization URL and the callback is played here by HTTP: the
// hosted page, the LOGIN message from the sandbox phone, the page's completion.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { freePort } from '#test/support/free-port.js';
import { eventually } from '#test/support/eventually.js';
import { REDIRECT_URI, cookieOf, oidcApp, pageData } from '#test/support/oidc.js';
import { openTestStore } from '#test/support/store.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const root = join(import.meta.dirname, '..', '..');
const venv = join(root, '.tools', 'authlib');
const python = join(venv, 'bin', 'python');
const AUTHLIB_PINS = ['Authlib==1.9.6', 'requests==2.34.2'];

let app: FastifyInstance;
let origin: string;
let dataDir: string;

beforeAll(async () => {
  if (!existsSync(python)) {
    execFileSync('python3', ['-m', 'venv', venv]);
    execFileSync(join(venv, 'bin', 'pip'), ['install', '-q', '--disable-pip-version-check', ...AUTHLIB_PINS]);
  }
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  dataDir = mkdtempSync(join(tmpdir(), 'authlib-'));
  const store = await openTestStore();
  app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'false' }), {
    store,
    sandboxTestMode: true,
  });
  await app.listen({ port, host: '127.0.0.1' });
  afterAll(async () => {
    await app.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
}, 600_000);

describe('Authlib (Python) against the OpenID provider of a Login app', () => {
  it('discovery, code flow with PKCE, ID token validation, userinfo', async () => {
    const f = await oidcApp(app);
    const child = spawn(python, [join(root, 'test', 'smoke', 'oidc', 'authlib_oidc.py')], {
      env: { ...process.env, ISSUER: f.issuer, CLIENT_ID: f.appId, CLIENT_SECRET: f.apiKey, REDIRECT_URI },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();

    const first = await lines.next();
    expect(first.done, stderr).toBe(false);
    const authorizationUrl = new URL(JSON.parse(first.value).authorization_url);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('nonce')).toBeTruthy();

    // The browser: the hosted page, the LOGIN message, the page's completion.
    const page = await app.inject({ url: `${authorizationUrl.pathname}${authorizationUrl.search}` });
    expect(page.statusCode, page.body.slice(0, 300)).toBe(200);
    const cookie = cookieOf(page.headers['set-cookie'])!;
    const data = pageData(page.body);
    await sendFromSandboxPhone(app, { phoneNumberId: f.numbers[0]!.id, from: '+15550104321', name: 'Ana Souza', text: `LOGIN ${data.loginCode}` });
    const redirect = await eventually(async () => {
      const res = await app.inject({
        method: 'POST',
        url: `/login/oidc/${f.appId}/authorize/complete`,
        headers: { 'content-type': 'application/json', cookie },
        payload: JSON.stringify({ request: data.requestId }),
      });
      return (res.json() as { redirect?: string }).redirect;
    });
    child.stdin.write(`${redirect}\n`);

    const second = await lines.next();
    expect(await exited, stderr).toBe(0);
    const result = JSON.parse(second.value) as { claims: Record<string, unknown>; userinfo: Record<string, unknown>; scope: string };
    expect(result.claims).toMatchObject({ iss: f.issuer, aud: f.appId, phone_number: '+15550104321', phone_number_verified: true, amr: ['whatsapp'] });
    expect(result.userinfo).toEqual({ sub: result.claims.sub, phone_number: '+15550104321', phone_number_verified: true, name: 'Ana Souza' });
    expect(result.scope).toBe('openid phone profile');
    console.log(`Authlib: ID token for sub ${String(result.claims.sub)}, userinfo ${JSON.stringify(result.userinfo)}`);
  });
});
