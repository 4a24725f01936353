// Catalogue group L (secrets): shown once, stored as digests or ciphertext, never logged, never
// echoed, rotated at once, hashed with the right cost, the at-rest key checked, no Referer leaks.
// bad-inputs L3 runs a realistic flow on an app whose pino output is captured, then greps every line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scrypt } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { redactUrl, scrubLogText } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { createPlatform, type Platform } from '#server/platform.js';
import { hashPassword, PASSWORD_COST } from '#server/lib/secrets.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { loginWebhookSecrets } from '#server/apis/login/hosted-webhook.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { buildShared } from '../helper.js';
import { openTestStore } from '../support/store.js';
import { startReceiver } from '../support/receiver.js';
import { PASSWORD, bearer, createKey, signUp } from '../unit/account/support.js';
import { Browser, basic, codeFor, createClient, exchange, token } from '../unit/connect/oauth/support.js';
import { expectProblem, workspace, type Workspace } from './support.js';
import { expectProblems, loggedApp, recordErrors } from './logged-app.js';
import { elapse, eventually } from '../support/eventually.js';

const json = { 'content-type': 'application/json' };

/** Every secret a workspace's owner can create through the APIs, each from its create answer. */
async function createSecrets(app: FastifyInstance, w: Workspace) {
  const key = (await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: w.owner }, payload: { name: 'ci' } })).json();
  const login = (
    await app.inject({ method: 'POST', url: '/api/login/apps', headers: { authorization: w.owner }, payload: { name: 'Shop', webhook_destination: 'hosted' } })
  ).json();
  const client = (
    await app.inject({
      method: 'POST',
      url: '/api/connect/clients',
      headers: { authorization: w.owner },
      payload: { name: 'CRM', redirect_uris: ['https://crm.test/cb'] },
    })
  ).json();
  const hook = (
    await app.inject({
      method: 'POST',
      url: '/api/webhook-endpoints',
      headers: w.headers,
      payload: { url: 'http://127.0.0.1:9/in', enabled_events: ['message.received'] },
    })
  ).json();
  return { key, login, client, hook };
}

async function databaseText(app: FastifyInstance): Promise<string> {
  const db = app.platform.store.db;
  const tables = await sql<{
    name: string;
  }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db);
  const parts: string[] = [];
  for (const { name } of tables.rows) parts.push(JSON.stringify((await sql`select * from ${sql.table(name)}`.execute(db)).rows));
  return parts.join('\n');
}

describe('L secrets', async () => {
  // The production password cost: bad-inputs L6 reads what sign-up stores.
  const app = await buildShared({ overrides: { passwordCost: PASSWORD_COST } });
  const seen = recordErrors(app);
  afterAll(() => {
    expect(expectProblems(seen)).toBeGreaterThan(5); // bad-inputs M1 over every error answer of this file
  });

  it('L1 key, Login app, client secret, webhook secret: only in the create answer; lists and gets show a prefix', async () => {
    const w = await workspace(app);
    const { key, login, client, hook } = await createSecrets(app, w);
    const shown = [
      [key.secret, key.prefix, '/api/account/api-keys', { authorization: w.owner }],
      [login.api_key, login.api_key_prefix, '/api/login/apps', { authorization: w.owner }],
      [login.webhook_secret, login.webhook_secret_prefix, `/api/login/apps/${login.id}`, { authorization: w.owner }],
      [client.client_secret, client.secret_prefix, '/api/connect/clients', { authorization: w.owner }],
      [hook.secret, String(hook.secret_hint).replace(/…$/, ''), '/api/webhook-endpoints', w.headers],
    ] as const;
    for (const [secret, prefix, url, headers] of shown) {
      expect(secret, url).toMatch(/^\w{20,}/);
      expect(secret.startsWith(prefix), `${url}: ${prefix}`).toBe(true);
      expect(prefix.length).toBeLessThan(secret.length / 2);
      const later = await app.inject({ url, headers });
      expect(later.statusCode).toBe(200);
      expect(later.body).not.toContain(secret);
      expect(later.body).toContain(prefix);
    }
  });

  it('L2 the database after creating every kind of secret: digests and AES-GCM ciphertext only', async () => {
    const w = await workspace(app);
    const { key, login, client, hook } = await createSecrets(app, w);
    const text = await databaseText(app);
    for (const secret of [key.secret, login.api_key, login.webhook_secret, client.client_secret, hook.secret]) expect(text).not.toContain(secret);
    // Digests are the keyed SHA-256 of the secret; signing secrets decrypt back (they must sign).
    const db = app.platform.store.db;
    const keyRow = await db.selectFrom('api_keys').select('digest').where('id', '=', key.id).executeTakeFirstOrThrow();
    expect(keyRow.digest).toBe(app.platform.secrets.digest(key.secret));
    const appRow = await db.selectFrom('login_apps').select(['api_key_digest', 'webhook_secret_enc']).where('id', '=', login.id).executeTakeFirstOrThrow();
    expect(appRow.api_key_digest).toBe(app.platform.secrets.digest(login.api_key));
    expect(appRow.webhook_secret_enc).toMatch(/^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/); // iv 12 B, GCM tag 16 B
    expect(app.platform.secrets.decrypt(appRow.webhook_secret_enc)).toBe(login.webhook_secret);
    const clientRow = await db.selectFrom('connect_clients').select('secret_digest').where('id', '=', client.client_id).executeTakeFirstOrThrow();
    expect(clientRow.secret_digest).toBe(app.platform.secrets.digest(client.client_secret));
    const hookRow = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(hookRow)).not.toContain(hook.secret);
  });

  it('L4 errors after wrong keys, secrets and tokens never echo the value sent or the one expected', async () => {
    const w = await workspace(app);
    const { client } = await createSecrets(app, w);
    const wrong = 'mk_WRONGwrongWRONGwrongWRONGwrongWRONGwron';
    const answers: [LightMyRequestResponse, string[]][] = [
      [await app.inject({ url: '/api/contacts', headers: { 'x-api-key': wrong } }), [wrong, w.key]],
      [await app.inject({ url: '/api/account/me', headers: { authorization: 'Bearer eyJwrong.token.value' } }), ['eyJwrong.token.value']],
      [await app.inject({ url: '/api/connect/documents', headers: { authorization: 'Bearer at_wrong_token_value_123456' } }), ['at_wrong_token_value_123456']],
      [
        await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': 'lk_live_wrongwrongwrongwrongwrongwrong12' } }),
        ['lk_live_wrongwrongwrongwrongwrongwrong12', w.loginKey],
      ],
      [
        await token(app, { grant_type: 'client_credentials' }, true, basic(client.client_id, 'cs_wrong_secret_value_987')),
        ['cs_wrong_secret_value_987', client.client_secret],
      ],
      [
        await token(app, {
          grant_type: 'refresh_token',
          refresh_token: 'rt_wrong_refresh_value_42',
          client_id: client.client_id,
          client_secret: client.client_secret,
        }),
        ['rt_wrong_refresh_value_42'],
      ],
      [
        await app.inject({ url: '/v1/auth/chatapp/events/lse_00000000000000000000?token=st_wrong_subscribe_token_77', headers: { 'x-api-key': w.loginKey } }),
        ['st_wrong_subscribe_token_77'],
      ],
      [
        await app.inject({
          method: 'POST',
          url: '/v1/auth/verify-token',
          headers: { 'x-api-key': w.loginKey, ...json },
          payload: { token: 'eyJ0.wrong-verification.token9' },
        }),
        ['eyJ0.wrong-verification.token9'],
      ],
    ];
    for (const [res, values] of answers) {
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(200);
      const everything = res.body + JSON.stringify(res.headers);
      for (const value of values) expect(everything, value).not.toContain(value);
    }
  });

  it('L5 rotate a Messaging key, a Login app key, a client secret: the old value refused at once', async () => {
    const w = await workspace(app);
    const { key, login, client } = await createSecrets(app, w);
    expect((await app.inject({ url: '/api/contacts', headers: { 'x-api-key': key.secret } })).statusCode).toBe(200); // cached now
    const newKey = (await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: { authorization: w.owner } })).json().secret;
    expectProblem(await app.inject({ url: '/api/contacts', headers: { 'x-api-key': key.secret } }), 401, 'unauthorized');
    expect((await app.inject({ url: '/api/contacts', headers: { 'x-api-key': newKey } })).statusCode).toBe(200);

    const start = (k: string) => app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': k } });
    expect((await start(login.api_key)).statusCode).toBe(201);
    const newLogin = (await app.inject({ method: 'POST', url: `/api/login/apps/${login.id}/rotate-api-key`, headers: { authorization: w.owner } })).json()
      .api_key;
    expectProblem(await start(login.api_key), 401, 'unauthorized');
    expect((await start(newLogin)).statusCode).toBe(201);

    // An unknown refresh token: the client is authenticated first (401 invalid_client), then the grant (400 invalid_grant).
    const credentials = (secret: string) => token(app, { grant_type: 'refresh_token', refresh_token: 'rt_unknown' }, true, basic(client.client_id, secret));
    const before = await credentials(client.client_secret);
    expect(before.json().error).toBe('invalid_grant');
    const rotated = (
      await app.inject({ method: 'POST', url: `/api/connect/clients/${client.client_id}/rotate-secret`, headers: { authorization: w.owner } })
    ).json().client_secret;
    const old = await credentials(client.client_secret);
    expect(old.statusCode).toBe(401);
    expect(old.json().error).toBe('invalid_client');
    expect((await credentials(rotated)).statusCode).toBe(before.statusCode); // whatever the grant answers, the secret itself is accepted
  });

  it('L5 rotate a Login webhook secret: with an overlap the old one signs until it ends, without it stops at once', async () => {
    const w = await workspace(app);
    const { login } = await createSecrets(app, w);
    const rotate = (body: object) =>
      app.inject({ method: 'POST', url: `/api/login/apps/${login.id}/rotate-webhook-secret`, headers: { authorization: w.owner, ...json }, payload: body });
    const signing = async (at: Date) =>
      loginWebhookSecrets(
        app.platform,
        await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', login.id).executeTakeFirstOrThrow(),
        at,
      );
    const overlapped = (await rotate({ previous_secret_valid_for: 3600 })).json().webhook_secret;
    expect(await signing(new Date())).toEqual([overlapped, login.webhook_secret]);
    expect(await signing(new Date(Date.now() + 3601_000))).toEqual([overlapped]);
    const atOnce = (await rotate({})).json().webhook_secret;
    expect(await signing(new Date())).toEqual([atOnce]);
  });

  it('L6 passwords: scrypt N=2^17, r=8, p=1 with maxmem above 128 MiB; keys: keyed SHA-256', { timeout: 30_000 }, async () => {
    const stored = await hashPassword(PASSWORD);
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[\w+/]{22}==\$[\w+/]{43}=$/);
    const derive = promisify(scrypt) as (p: string, s: string, n: number, o: object) => Promise<Buffer>;
    const cost = { N: 2 ** 17, r: 8, p: 1 };
    await expect(derive('x', 'salt', 32, cost)).rejects.toThrow(/memory/i); // the 32 MiB default
    await expect(derive('x', 'salt', 32, { ...cost, maxmem: 128 * 1024 * 1024 })).rejects.toThrow(/memory/i);
    const w = await workspace(app);
    const owner = await app.platform.store.db.selectFrom('owners').select('password_hash').where('id', '=', w.ownerId).executeTakeFirstOrThrow();
    expect(owner.password_hash).toBe('x'); // the fixture writes owners directly; the API path is checked below
    const digest = app.platform.secrets.digest(w.key);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(digest).not.toBe(app.platform.secrets.digest(`${w.key.slice(0, -1)}${w.key.endsWith('x') ? 'y' : 'x'}`));
  });

  it('L6 a workspace signed up through the API stores its password as scrypt at OWASP cost', { timeout: 60_000 }, async () => {
    const owner = await signUp(app);
    const row = await app.platform.store.db.selectFrom('owners').select('password_hash').where('email', '=', owner.email).executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^scrypt\$131072\$8\$1\$/);
    expect(row.password_hash).not.toContain(PASSWORD);
  });

  it('L7 production without SECRET_KEY, or with a short one: refuses to start with a clear message', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', PUBLIC_URL: 'https://api.example' })).toThrow(/SECRET_KEY is required/);
    expect(() => loadConfig({ SECRET_KEY: 'short' })).toThrow(/SECRET_KEY must be at least 32 characters/);
  });

  // The key check value in platform_settings (server/platform.ts, migration 018).
  it('L7 a wrong SECRET_KEY on a database sealed with another: refuses to start', { timeout: 60_000 }, async () => {
    const store = await openTestStore();
    const dataDir = mkdtempSync(join(tmpdir(), 'l7-'));
    const open = (key: string) => createPlatform(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'false', SECRET_KEY: key }), { store });
    let second: Platform | undefined;
    try {
      const first = await open('first-secret-key-0123456789-abcdefghij');
      await first.close();
      second = await open('other-secret-key-0123456789-abcdefghij');
    } catch (error) {
      expect(String(error)).toMatch(/SECRET_KEY/); // the fixed server: a clear refusal
      return;
    } finally {
      await second?.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect.unreachable('a platform started with another SECRET_KEY on data sealed with the first');
  });

  it('L8 pages with secrets in the URL send Referrer-Policy: no-referrer; token answers Cache-Control: no-store', async () => {
    const w = await workspace(app);
    for (const url of ['/l/lnk_unknown_slug_value', '/connect/authorize?client_id=cli_x&response_type=code', '/account/sign-in']) {
      const res = await app.inject(url);
      expect(res.headers['referrer-policy'], url).toBe('no-referrer');
    }
    const { key, login, client } = await createSecrets(app, w);
    expect(key.secret).toBeTruthy();
    const tokenAnswer = await token(app, { grant_type: 'refresh_token', refresh_token: 'rt_unknown' }, true, basic(client.client_id, client.client_secret));
    const started = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': login.api_key } });
    const keyAnswer = await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: w.owner }, payload: { name: 'n' } });
    for (const res of [tokenAnswer, started, keyAnswer]) expect(String(res.headers['cache-control']), `${res.statusCode} ${res.body}`).toMatch(/no-store/);
  });
});

describe('L3 logs', async () => {
  const { app, lines } = await loggedApp();
  it('L3 redaction helpers: query values, /l/<slug>, bearer values and phone numbers', () => {
    expect(redactUrl('/v1/auth/chatapp/events/lse_1?token=abc&limit=5')).toBe('/v1/auth/chatapp/events/lse_1?token=[REDACTED]&limit=5');
    expect(redactUrl('/cb?code=xyz&state=s')).toBe('/cb?code=[REDACTED]&state=[REDACTED]');
    expect(redactUrl('/l/Zx8slugSecret/file')).toBe('/l/[REDACTED]/file');
    expect(redactUrl('/l/assets/viewer.js')).toBe('/l/assets/viewer.js');
    expect(scrubLogText('fetch https://h.test/x?token=abc failed; Bearer eyJ.x.y to +49 151 1234 5678')).toBe(
      'fetch https://h.test/x?token=[REDACTED] failed; Bearer [REDACTED] to [PHONE]',
    );
  });

  it('L3 J8 a realistic run logged at debug: 0 secrets, tokens, codes or phones; one JSON line each, with its request id', { timeout: 120_000 }, async () => {
    const created: string[] = [PASSWORD];
    const requestIds: string[] = [];
    const call = async (options: InjectOptions) => {
      const res = await app.inject(options);
      requestIds.push(String(res.headers['x-request-id']));
      return res;
    };
    const receiver = await startReceiver();
    try {
      // Account: sign-up, a key, its rotation, both used (the old one refused).
      const owner = await signUp(app);
      created.push(owner.token);
      const key = await createKey(app, owner.token);
      const rotated = (await call({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: bearer(owner.token) })).json().secret;
      created.push(key.secret, rotated);
      await call({ url: '/api/contacts', headers: { 'x-api-key': key.secret } });
      await call({ url: '/api/contacts?limit=5', headers: { authorization: `ApiKey ${rotated}` } });
      await call({ url: `/api/contacts?api_key=${rotated}` }); // bad-inputs A4: a key in the query is refused and never logged

      // Messaging: a number, a customer writing in, a contact, a reply, a lookup by phone, a webhook to a URL with a token.
      const { numbers } = await createSandboxAccount(app.platform.store.db, owner.workspace.id);
      const customer = '+4915112345678';
      const contact = '+5511912345678';
      created.push(customer, customer.slice(1), contact, contact.slice(1));
      const hookToken = 'rcv_token_0f1e2d3c4b5a69788796';
      created.push(hookToken);
      const hook = (
        await call({
          method: 'POST',
          url: '/api/webhook-endpoints',
          headers: { 'x-api-key': rotated },
          payload: { url: `${receiver.url}?token=${hookToken}`, enabled_events: ['message.received'] },
        })
      ).json();
      created.push(hook.secret);
      await sendFromSandboxPhone(app, { phoneNumberId: numbers[0]!.id, from: customer, name: 'Lena', text: 'Hello' });
      await call({ method: 'POST', url: '/api/contacts', headers: { 'x-api-key': rotated }, payload: { name: 'Ana', contact_no: '+55 11 91234-5678' } });
      await call({
        method: 'POST',
        url: '/api/chatapp/send',
        headers: { 'x-api-key': rotated },
        payload: { contact_no: customer, chatapp_phone_number: numbers[0]!.display_phone_number, messageType: 'text', message: 'Hi Lena' },
      });
      await call({ url: `/api/chatapp/messages?contact_no=${encodeURIComponent(customer)}`, headers: { 'x-api-key': rotated } });
      await call({ method: 'POST', url: '/api/contacts', headers: { 'x-api-key': rotated }, payload: { name: 'Dup', contact_no: contact } }); // 409 path

      // Login: an app, its key rotated, a session verified by the customer's LOGIN message, its stream, the token verified.
      const loginApp = (
        await call({ method: 'POST', url: '/api/login/apps', headers: bearer(owner.token), payload: { name: 'Shop', webhook_destination: 'hosted' } })
      ).json();
      const loginKey = (await call({ method: 'POST', url: `/api/login/apps/${loginApp.id}/rotate-api-key`, headers: bearer(owner.token) })).json().api_key;
      created.push(loginApp.api_key, loginApp.webhook_secret, loginKey);
      const session = (await call({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': loginKey } })).json();
      created.push(session.subscribeToken, session.loginCode);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const port = (app.server.address() as { port: number }).port;
      const stream = new AbortController();
      const events = await fetch(`http://127.0.0.1:${port}/v1/auth/chatapp/events/${session.sessionId}?token=${session.subscribeToken}`, {
        signal: stream.signal,
      });
      expect(events.status).toBe(200);
      await call({
        url: `/v1/auth/chatapp/events/${session.sessionId}?token=${session.subscribeToken}x`,
        headers: { 'user-agent': 'evil\u001b[31m\u0007 agent' },
      });
      const service = await app.loginServiceNumber.get();
      await sendFromSandboxPhone(app, { phoneNumberId: service.id, from: customer, name: 'Lena', text: `LOGIN ${session.loginCode}` });
      const verification = await eventually(
        async () =>
          (await call({ url: `/v1/auth/chatapp/status/${session.sessionId}`, headers: { 'x-api-key': loginKey } })).json().verificationToken as
            | string
            | undefined,
        { within: 3_000, what: 'the verification token', app },
      );
      expect(verification).toMatch(/^eyJ/);
      created.push(verification, verification.split('.')[2]!);
      const verified = await call({
        method: 'POST',
        url: '/v1/auth/verify-token',
        headers: { 'x-api-key': loginKey, ...json },
        payload: { token: verification },
      });
      expect(verified.json().valid).toBe(true);
      stream.abort();

      // Connect: a client, consent in a signed-in browser, the code exchanged, refreshed, used, revoked, the secret rotated.
      const client = await createClient(app, owner);
      created.push(client.client_secret!);
      const browser = new Browser(app);
      await browser.signIn(owner.email);
      created.push(...browser.cookies.values());
      const { code, verifier } = await codeFor(browser, client);
      created.push(code, verifier);
      const tokens = (await exchange(app, client, code, verifier)).json();
      await exchange(app, client, code, verifier); // bad-inputs C8: reuse
      created.push(tokens.access_token, tokens.refresh_token);
      await call({ url: '/api/connect/documents', headers: bearer(tokens.access_token) });
      const refreshed = (
        await token(app, {
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: client.client_id,
          client_secret: client.client_secret!,
        })
      ).json();
      created.push(refreshed.access_token, refreshed.refresh_token);
      await call({
        method: 'POST',
        url: '/api/oauth/revoke',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(client.client_id, client.client_secret!) },
        payload: `token=${refreshed.access_token}`,
      });
      await call({ url: '/api/connect/documents', headers: bearer(refreshed.access_token) });
      const newSecret = (await call({ method: 'POST', url: `/api/connect/clients/${client.client_id}/rotate-secret`, headers: bearer(owner.token) })).json()
        .client_secret;
      created.push(newSecret);
      await elapse(300, 'outbox deliveries and bus events log after the requests, with no event to wait on');
    } finally {
      await receiver.close();
    }

    const text = lines.join('');
    expect(lines.length).toBeGreaterThan(50);
    const secrets = created.filter((s) => typeof s === 'string' && s.length >= 6);
    expect(secrets.length).toBeGreaterThan(20);
    expect(secrets.filter((s) => text.includes(s))).toEqual([]);
    // The redaction ran (rather than the URLs never being logged): query values censored in place.
    expect(text).toContain('?token=[REDACTED]');
    expect(text).toContain('?api_key=[REDACTED]');
    expect(text).toContain('?contact_no=[REDACTED]');
    // bad-inputs J8: every entry is one line of JSON; every request line carries the id answered in x-request-id.
    const entries = lines.map((line) => {
      expect(line.endsWith('\n') && line.indexOf('\n') === line.length - 1, line).toBe(true);
      return JSON.parse(line) as { reqId?: string; req?: unknown; res?: unknown; level: number };
    });
    for (const entry of entries.filter((e) => e.req || e.res)) expect(entry.reqId).toMatch(/^[0-9a-f-]{36}$/);
    const logged = new Set(entries.map((e) => e.reqId));
    for (const id of requestIds) expect(logged.has(id), id).toBe(true);
  });
});
