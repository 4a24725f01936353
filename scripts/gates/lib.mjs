// Shared by the independent gates (scripts/gates/*.mjs): the eight documents, pinned tools
// installed into ignored folders under .tools/, and a real server for smoke programs.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = new URL('../..', import.meta.url).pathname;
export const APIS = ['account', 'connect', 'login', 'messaging'];
export const DOCUMENTS = APIS.flatMap((api) => ['3.0', '3.1'].map((version) => `generated/${api}/openapi.${version}.yaml`));
export const tools = join(root, '.tools');
/** The local image every smoke program uploads and sends. */
export const IMAGE = join(root, 'test', 'smoke', 'fixtures', 'photo.png');

/** openapi-generator's CLI jar (Maven Central, pinned), fetched once into .tools/openapi-generator. */
export const OPENAPI_GENERATOR_VERSION = '7.25.0';
export function openapiGeneratorJar() {
  const dir = join(tools, 'openapi-generator');
  const jar = join(dir, `openapi-generator-cli-${OPENAPI_GENERATOR_VERSION}.jar`);
  if (!existsSync(jar)) {
    console.log(`fetching openapi-generator-cli ${OPENAPI_GENERATOR_VERSION} from Maven Central into .tools/openapi-generator`);
    mkdirSync(dir, { recursive: true });
    mustRun('mvn', [
      '-q',
      '-B',
      'dependency:copy',
      `-Dartifact=org.openapitools:openapi-generator-cli:${OPENAPI_GENERATOR_VERSION}`,
      `-DoutputDirectory=${dir}`,
    ]);
  }
  return jar;
}

/**
 * The `java` arguments that run openapi-generator's `generate` over one API's 3.0 document into
 * `dir`, with `props` (each `name=value[,name=value…]`) as its only additional properties.
 */
export function openapiGeneratorArgs(generator, api, dir, props = []) {
  const input = join(root, 'generated', api, 'openapi.3.0.yaml');
  return ['-jar', openapiGeneratorJar(), 'generate', '-g', generator, '-i', input, '-o', dir, ...(props.length ? ['--additional-properties', ...props] : [])];
}

/** Runs a command to its end; answers { status, output }. */
export function run(cmd, args, options = {}) {
  const res = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return { status: res.status, output: `${res.stdout ?? ''}${res.stderr ?? ''}${res.error ? String(res.error) : ''}` };
}

/** Runs a command; prints its output and exits 1 when it fails. */
export function mustRun(cmd, args, options = {}) {
  const res = run(cmd, args, options);
  if (res.status !== 0) {
    process.stderr.write(res.output);
    console.error(`FAIL ${cmd} ${args.join(' ')} (exit ${res.status})`);
    process.exit(1);
  }
  return res.output;
}

/** A venv under .tools/<name> with exactly these pins (requirements lines); answers its bin folder. */
export function venv(name, pins) {
  const dir = join(tools, name);
  const bin = join(dir, 'bin');
  const stamp = join(dir, '.pins');
  const wanted = pins.join('\n');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return bin;
  rmSync(dir, { recursive: true, force: true });
  mustRun(process.env.PYTHON ?? 'python3', ['-m', 'venv', dir]);
  mustRun(join(bin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...pins]);
  writeFileSync(stamp, wanted);
  return bin;
}

/** A free TCP port on the loopback address. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * The built server (dist/, `npm run build`) on a free port with the embedded store in a new
 * folder and the demo on: answers its URL, the demo credentials it printed on first start and
 * stop(). Every smoke program runs against it.
 */
export async function startServer() {
  mustRun(process.execPath, ['scripts/build.mjs', '--if-changed']);
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'gates-server-'));
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/server/server.js'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      DEMO: 'true',
      PUBLIC_URL: url,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_IP_PER_MINUTE: '10000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }).then(() => rmSync(dataDir, { recursive: true, force: true }));
  // Up to 180 s for the first start (migrations, the demo workspace; a loaded CI machine), polled every 250 ms.
  for (let i = 0; i < 720; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output}`);
    const ready = await fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready && /API key\s+(\S+)/.test(output) && /sandbox no\.\s+(\S+)/.test(output)) {
      return { url, output, apiKey: /API key\s+(\S+)/.exec(output)[1], sandboxNumber: /sandbox no\.\s+(\S+)/.exec(output)[1], stop };
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`the server did not start with demo credentials in 180 s:\n${output}`);
}

/**
 * A customer writes to the demo's sandbox number from the sandbox phone page (the form a person
 * uses), which opens the 24-hour window free-form sends (an image) need.
 */
export async function customerWrites(url, sandboxNumber, from) {
  const page = await fetch(`${url}/sandbox/phone`);
  const cookies = page.headers.getSetCookie().map((c) => c.split(';')[0]);
  const htmlText = await page.text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(htmlText)?.[1];
  const digits = sandboxNumber.replace(/\D/g, '');
  const option = [...htmlText.matchAll(/<option value="([^"]+)"[^>]*>([^<]*)</g)].find((m) => m[2].replace(/\D/g, '').includes(digits));
  if (!csrf || !option) throw new Error(`the sandbox phone page has no form for ${sandboxNumber} (status ${page.status})`);
  const res = await fetch(`${url}/sandbox/phone/send`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; '), 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams({ _csrf: csrf, to: option[1], from, name: 'Smoke Customer', text: 'Hi, can I see a photo?' }),
  });
  if (res.status >= 400) throw new Error(`the sandbox phone refused the message: ${res.status} ${await res.text()}`);
}

/** Starts the server, opens a chat, answers the environment every smoke program reads. */
export async function smokeServer({ seedOwner = false } = {}) {
  const server = await startServer();
  const contact = '+14155550123';
  await customerWrites(server.url, server.sandboxNumber, contact);
  const env = {
    CHATAPP_BASE_URL: server.url,
    MESSAGING_API_KEY: server.apiKey,
    CHATAPP_SENDER: server.sandboxNumber,
    CHATAPP_CONTACT: contact,
    CHATAPP_IMAGE: IMAGE,
    ...(seedOwner ? await seedOwnerApps(server.url) : {}),
  };
  return { server, env };
}

const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://crm.test/cb';

/** A cookie jar over fetch, as a browser keeps cookies between requests (no redirects followed). */
function browser(url) {
  const jar = new Map();
  return async (path, init = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(`${url}${path}`, { redirect: 'manual', ...init, headers: { ...(cookie ? { cookie } : {}), ...init.headers } });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const [name, ...value] = pair.split('=');
      if (value.join('=') === '' || attrs.some((a) => /^\s*max-age=0\b/i.test(a))) jar.delete(name.trim());
      else jar.set(name.trim(), value.join('='));
    }
    return res;
  };
}

const hiddenInputs = (page) =>
  Object.fromEntries(
    [...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      m[2].replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]),
    ]),
  );

/**
 * A second workspace seeded through the APIs the way its owner would: a Login app (its key starts
 * sessions) and a Connect client whose access token (the authorization-code flow with PKCE,
 * approved on the consent page) reads Connect resources. Answers LOGIN_API_KEY and
 * CONNECT_ACCESS_TOKEN for the smoke programs.
 */
export async function seedOwnerApps(url) {
  const name = `smoke${Date.now().toString(36)}`;
  const email = `${name}@example.test`;
  const json = async (res, what) => {
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  const post = (path, body, token) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const owner = await json(
    await post('/api/account/workspaces', {
      email,
      password: PASSWORD,
      name: `Owner ${name}`,
      workspace_name: `Workspace ${name}`,
      workspace_slug: `ws-${name}`,
    }),
    'sign-up',
  );
  const token = owner.session.access_token;
  const loginApp = await json(await post('/api/login/apps', { name: 'Smoke Shop' }, token), 'create Login app');
  const client = await json(await post('/api/connect/clients', { name: 'Smoke CRM', redirect_uris: [REDIRECT] }, token), 'create Connect client');
  const go = browser(url);
  const form = (path, fields) =>
    go(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(fields),
    });
  const signInPage = await (await go('/account/sign-in')).text();
  const signedIn = await form('/account/sign-in', { ...hiddenInputs(signInPage), email, password: PASSWORD, next: '' });
  if (signedIn.status !== 303) throw new Error(`sign-in: ${signedIn.status}`);
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'documents:write links:write analytics:read webhooks:write',
    state: 'st',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const consentPage = await go(`/connect/authorize?${query}`);
  if (consentPage.status !== 200) throw new Error(`consent page: ${consentPage.status}`);
  const decided = await form('/connect/authorize/decision', { ...hiddenInputs(await consentPage.text()), decision: 'approve' });
  const code = decided.status === 303 ? new URL(decided.headers.get('location')).searchParams.get('code') : null;
  if (!code) throw new Error(`consent: ${decided.status} ${decided.headers.get('location')}`);
  const tokens = await json(
    await fetch(`${url}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    }),
    'token exchange',
  );
  return { LOGIN_API_KEY: loginApp.api_key, CONNECT_ACCESS_TOKEN: tokens.access_token };
}

/** What the server must show after a smoke program printed `login: started <ls_id>`: that session, pending. */
export async function checkLogin(env, stdout, label) {
  const sessionId = /login: started (ls_\w+)/.exec(stdout)?.[1];
  if (!sessionId) throw new Error(`${label}: the program did not report a login session:\n${stdout}`);
  const res = await fetch(`${env.CHATAPP_BASE_URL}/v1/auth/chatapp/status/${sessionId}`, { headers: { 'x-api-key': env.LOGIN_API_KEY } });
  const body = await res.json();
  if (res.status !== 200 || body.status !== 'pending')
    throw new Error(`${label}: the server does not show ${sessionId} pending: ${res.status} ${JSON.stringify(body)}`);
  if (!/connect: listed \d+ document\(s\) with the bearer token/.test(stdout))
    throw new Error(`${label}: the program did not report the Connect read:\n${stdout}`);
  console.log(`${label}: the server shows login session ${sessionId} (pending)`);
}

/**
 * What the server must show after a smoke program printed `sent <msg_id> (image, media <med_id>)`:
 * the message exists, is an image and carries that upload.
 */
export async function checkSent(env, stdout, label) {
  const match = /sent (msg_\w+) \(image, media (med_\w+)\)/.exec(stdout);
  if (!match) throw new Error(`${label}: the program did not report a send:\n${stdout}`);
  const headers = { 'x-api-key': env.MESSAGING_API_KEY };
  const contacts = await (await fetch(`${env.CHATAPP_BASE_URL}/api/contacts?limit=100`, { headers })).json();
  const contact = contacts.data?.find((c) => c.contact_no === env.CHATAPP_CONTACT);
  if (!contact) throw new Error(`${label}: the server lists no contact ${env.CHATAPP_CONTACT}: ${JSON.stringify(contacts)}`);
  const res = await fetch(`${env.CHATAPP_BASE_URL}/api/chatapp/messages?contact_id=${contact.id}&limit=100`, { headers });
  const page = await res.json();
  const body = res.status === 200 ? page.data.find((m) => m.id === match[1]) : undefined;
  if (body?.type !== 'image' || body.direction !== 'outbound') {
    throw new Error(`${label}: the server does not show the image message ${match[1]}: ${res.status} ${JSON.stringify(body ?? page)}`);
  }
  console.log(`${label}: the server shows ${match[1]} (image, outbound, ${body.status})`);
}

export const tmpFolder = (name) => {
  const dir = join(root, '.tmp', 'gates', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
};
