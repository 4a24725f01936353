// Catalogue group A (authentication) against the real APIs and the shared fixture: every refusal
// is one 401 body (no hint why), changes nothing, and names the scheme in WWW-Authenticate.
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { findByDigest } from '#server/auth/api-keys.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { SCOPES, issueTokens } from '#server/apis/connect/oauth/tokens.js';
import { hashPassword } from '#server/lib/secrets.js';
import { newId } from '#server/lib/ids.js';
import { buildShared } from '../helper.js';
import { connectBearer } from '../support/connect.js';
import { sameness } from '../unit/account/support.js';
import { basic } from '../unit/connect/oauth/support.js';
import { PROBLEMS, expectNoChange, expectProblem, workspace, type Workspace } from './support.js';
import { securedOperations, urlOf } from './sweep.js';
import { expectProblems, recordErrors } from './logged-app.js';

const clock = { now: Date.now() };
const app = await buildShared({ overrides: { now: () => new Date(clock.now) } });
const seen = recordErrors(app);
afterAll(() => {
  expect(expectProblems(seen)).toBeGreaterThan(20); // bad-inputs M1 over every error answer of this file
});

const contacts = (headers: Record<string, string>, url = '/api/contacts') => app.inject({ url, headers });
const documents = (authorization: string) => app.inject({ url: '/api/connect/documents', headers: { authorization } });
/** A Messaging key made through the owner API, as a customer would. */
const newKey = async (w: Workspace) =>
  (await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: w.owner }, payload: { name: 'k' } })).json();

/** A 401 that changed nothing; its body without the per-request fields. */
async function refused(act: () => Promise<LightMyRequestResponse>, challenge?: string | RegExp) {
  // Keys record last_used_at on success only; sign-in throttles count failures by design (bad-inputs A10).
  const res = await expectNoChange(app, act, { ignore: ['sign_in_failures'] });
  const body = expectProblem(res, 401, 'unauthorized');
  if (challenge) expect(res.headers['www-authenticate']).toMatch(challenge);
  return sameness(body);
}

describe('A authentication', () => {
  it('A1 GET /api/contacts with no credential: 401 unauthorized, WWW-Authenticate: ApiKey realm="messaging"', async () => {
    await refused(() => contacts({}), /^ApiKey realm="messaging"(, |$)/);
  });

  it('A2 X-API-Key never issued, revoked, 8 KB long, non-ASCII: one 401 body for all, never 500', async () => {
    const w = await workspace(app);
    const revoked = await newKey(w);
    await app.inject({ method: 'POST', url: `/api/account/api-keys/${revoked.id}/revoke`, headers: { authorization: w.owner } });
    const values = [`mk_${'A'.repeat(40)}`, revoked.secret, `mk_${'x'.repeat(8 * 1024 - 100)}`, `mk_${'é'.repeat(40)}`, 'mk_\u00ff\u00fe'];
    const bodies = new Set<string>();
    for (const value of values) bodies.add(JSON.stringify(await refused(() => contacts({ 'x-api-key': value }), /ApiKey/)));
    expect(bodies.size).toBe(1);
    expect([...bodies][0]).not.toMatch(/revoked|expired|unknown|length|ascii/i);
    // Over the 8 KiB header limit the socket answers 431 (test/unit/http-hygiene.test.ts: 'A2 an 8 KB X-API-Key: 431').
  });

  it('A3 the old value right after rotating a Messaging key and a Login app key: 401 at once; the new value works', async () => {
    const w = await workspace(app);
    const key = await newKey(w);
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(200); // cached from here
    const rotated = (await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: { authorization: w.owner } })).json();
    await refused(() => contacts({ 'x-api-key': key.secret }));
    expect((await contacts({ 'x-api-key': rotated.secret })).statusCode).toBe(200);

    const login = (
      await app.inject({
        method: 'POST',
        url: '/api/login/apps',
        headers: { authorization: w.owner },
        payload: { name: 'Shop', webhook_destination: 'hosted' },
      })
    ).json();
    const status = (k: string) => app.inject({ url: '/v1/auth/chatapp/status/lse_00000000000000000000', headers: { 'x-api-key': k } });
    expect((await status(login.api_key)).statusCode).toBe(404); // authenticated: the session is unknown
    const newLogin = (await app.inject({ method: 'POST', url: `/api/login/apps/${login.id}/rotate-api-key`, headers: { authorization: w.owner } })).json()
      .api_key;
    await refused(() => status(login.api_key));
    expect((await status(newLogin)).statusCode).toBe(404);
    // The same Login key as `Authorization: ApiKey`, which the contract's one key scheme describes.
    const viaAuthorization = await app.inject({ url: '/v1/auth/chatapp/status/lse_00000000000000000000', headers: { authorization: `ApiKey ${newLogin}` } });
    expect(viaAuthorization.statusCode).toBe(404);
  });

  it('A4 a valid key only in the query (?api_key=) or a cookie: 401, keys come from headers only', async () => {
    const w = await workspace(app);
    for (const name of ['api_key', 'apiKey', 'x-api-key', 'key']) await refused(() => contacts({}, `/api/contacts?${name}=${w.key}`));
    await refused(() => contacts({ cookie: `api_key=${w.key}; x-api-key=${w.key}` }));
  });

  it('A5 Authorization: apikey <key> accepted (schemes are case-insensitive); ApiKey<key> and Bearer <api key> 401', async () => {
    const w = await workspace(app);
    for (const scheme of ['apikey', 'ApiKey', 'APIKEY']) expect((await contacts({ authorization: `${scheme} ${w.key}` })).statusCode).toBe(200);
    for (const value of [`ApiKey${w.key}`, `Bearer ${w.key}`, `ApiKey ${w.key} extra`, `Basic ${w.key}`])
      await refused(() => contacts({ authorization: value }));
  });

  it('A6 expired Connect bearer: 401 with WWW-Authenticate: Bearer error="invalid_token"', async () => {
    const w = await workspace(app);
    expect((await documents(w.connect)).statusCode).toBe(200);
    clock.now += 3600_000 + 1000; // access tokens live one hour
    try {
      await refused(() => documents(w.connect), /^Bearer realm="connect", error="invalid_token"/);
    } finally {
      clock.now -= 3600_000 + 1000;
    }
  });

  it('A6 bearer revoked through RFC 7009 (POST /api/oauth/revoke): 401 invalid_token on the next call', async () => {
    const w = await workspace(app);
    const client = (
      await app.inject({
        method: 'POST',
        url: '/api/connect/clients',
        headers: { authorization: w.owner },
        payload: { name: 'CRM', redirect_uris: ['https://crm.test/cb'] },
      })
    ).json();
    const db = app.platform.store.db;
    const grant = { id: newId('grt'), workspace_id: w.workspaceId, client_id: client.client_id };
    await db
      .insertInto('connect_grants')
      .values({ ...grant, owner_id: w.ownerId, scopes: [...SCOPES], created_at: new Date(clock.now), updated_at: new Date(clock.now) })
      .execute();
    const { access_token } = await issueTokens(db, app.platform.secrets, new Date(clock.now), grant, newId('fam'), [...SCOPES]);
    expect((await documents(`Bearer ${access_token}`)).statusCode).toBe(200);
    const revoked = await app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(client.client_id, client.client_secret) },
      payload: `token=${access_token}&token_type_hint=access_token`,
    });
    expect(revoked.statusCode).toBe(200);
    await refused(() => documents(`Bearer ${access_token}`), /error="invalid_token"/);
  });

  it('A7 bearer with only documents:write reading analytics: 403 forbidden, insufficient_scope naming analytics:read', async () => {
    const w = await workspace(app);
    const narrow = `Bearer ${await connectBearer(app, w.workspaceId, ['documents:write'])}`;
    for (const url of ['/api/connect/documents/doc_0000000000000000/analytics', '/api/connect/links/lnk_0000000000000000/analytics']) {
      const res = await expectNoChange(app, () => app.inject({ url, headers: { authorization: narrow } }));
      const body = expectProblem(res, 403, 'forbidden');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="connect", error="insufficient_scope", scope="analytics:read"');
      expect(body.required_scope).toBe('analytics:read');
      expect(body.detail).toContain('analytics:read');
    }
  });

  it('A8 credentials on the wrong API: bearer as X-API-Key; Messaging key as bearer; Login key on /api/contacts; Messaging key on verify-token', async () => {
    const w = await workspace(app);
    const bearerValue = w.connect.slice('Bearer '.length);
    await refused(() => contacts({ 'x-api-key': bearerValue }));
    await refused(() => contacts({ authorization: w.connect }));
    await refused(() => documents(`Bearer ${w.key}`));
    await refused(() => documents(w.owner));
    await refused(() => contacts({ 'x-api-key': w.loginKey }));
    await refused(() => app.inject({ url: '/api/account/me', headers: { authorization: w.connect } }));
    await refused(() => app.inject({ url: '/api/account/me', headers: { 'x-api-key': w.key } }));
    await refused(() =>
      app.inject({
        method: 'POST',
        url: '/v1/auth/verify-token',
        headers: { 'x-api-key': w.key, 'content-type': 'application/json' },
        payload: { token: 'eyJ.x.y' },
      }),
    );
    await refused(() => app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': w.key } }));
  });

  it('A9 owner JWT with alg none, expired, or signed by another key: 401', async () => {
    const w = await workspace(app);
    const me = (token: string) => app.inject({ url: '/api/account/me', headers: { authorization: `Bearer ${token}` } });
    const genuine = w.owner.slice('Bearer '.length);
    expect((await me(genuine)).statusCode).toBe(200);
    const [, payload] = genuine.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const expired = (await issueOwnerToken(app.platform, { workspaceId: w.workspaceId, ownerId: w.ownerId }, 'owner-api', -60)).token;
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const otherKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode('another-key-another-key-another-key-0123'));
    for (const token of [none, expired, otherKey]) await refused(() => me(token), /^Bearer realm="account"/);
  });

  it('A10 owner sign-in: wrong password 10 times and an unknown email: identical 401s; then 429 for that account and IP', { timeout: 300_000 }, async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const { email } = await db.selectFrom('owners').select('email').where('id', '=', w.ownerId).executeTakeFirstOrThrow();
    // Hashed at the app's cost, as its sign-up would (an unknown email's check runs at that cost too).
    await db
      .updateTable('owners')
      .set({ password_hash: await hashPassword('the right password', app.platform.passwordCost) })
      .where('id', '=', w.ownerId)
      .execute();
    const signIn = (address: string, password: string, ip: string) =>
      app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: address, password }, remoteAddress: ip });
    const wrong = sameness(expectProblem(await signIn(email, 'wrong password 0', '10.7.0.1'), 401, 'unauthorized'));
    const unknown = sameness(expectProblem(await signIn(`nobody-${w.ownerId}@example.test`, 'wrong password 0', '10.7.0.2'), 401, 'unauthorized'));
    expect(unknown).toEqual(wrong);
    for (let i = 1; i < 10; i++) expect((await signIn(email, `wrong password ${i}`, `10.7.1.${i}`)).statusCode).toBe(401);
    const account = await signIn(email, 'the right password', '10.7.2.1'); // even the right password, from a fresh IP
    expectProblem(account, 429, 'rate-limited');
    expect(Number(account.headers['retry-after'])).toBeGreaterThan(0);
    // ten failures from one IP block that IP for any account
    for (let i = 0; i < 10; i++) await signIn(`nobody${i}-${w.ownerId}@example.test`, 'x', '10.7.3.1');
    expectProblem(await signIn(`someone-${w.ownerId}@example.test`, 'x', '10.7.3.1'), 429, 'rate-limited');
  });

  it('A11 a key one character off a real one: 401; lookup by keyed digest, compared with timingSafeEqual', async () => {
    const w = await workspace(app);
    const last = w.key.at(-1)!;
    await refused(() => contacts({ 'x-api-key': `${w.key.slice(0, -1)}${last === 'a' ? 'b' : 'a'}` }));
    const { sql, parameters } = findByDigest(app.platform.store.db, app.platform.secrets.digest(w.key)).compile();
    expect(sql).toMatch(/where "digest" = \$1$/);
    expect(parameters).toEqual([app.platform.secrets.digest(w.key)]);
    expect(parameters).not.toContain(w.key);
  });

  it('A12 an owner browser-session JWT (audience owner-browser) as an API bearer: 401', async () => {
    const w = await workspace(app);
    const browser = (await issueOwnerToken(app.platform, { workspaceId: w.workspaceId, ownerId: w.ownerId }, 'owner-browser')).token;
    await refused(() => app.inject({ url: '/api/account/me', headers: { authorization: `Bearer ${browser}` } }));
  });

  it('A13 an owner JWT of an owner deleted since: 401 at once', async () => {
    const w = await workspace(app);
    await app.platform.store.db
      .updateTable('owners')
      .set({ workspace_id: (await workspace(app)).workspaceId })
      .where('id', '=', w.ownerId)
      .execute();
    await refused(() => app.inject({ url: '/api/account/me', headers: { authorization: w.owner } }));
  });
});

describe('A authentication comes first', () => {
  // From their own address: these requests fail authentication on purpose, and bad-inputs K3 counts failures per IP.
  const remoteAddress = '10.14.0.1';

  it('A14 every secured operation without a credential: 401, whatever its path ids or body (swept from the documents)', async () => {
    const operations = securedOperations();
    expect(operations.length).toBeGreaterThan(100);
    for (const op of operations) {
      const url = urlOf(op, Object.fromEntries(op.params.map((name) => [name, 'nope%00'])));
      // A body that would fail parsing and validation: authentication must answer before either.
      const payload = op.body ? '{"broken": ' : undefined;
      const headers: Record<string, string> = op.body
        ? { 'content-type': op.body.contentType.startsWith('multipart/') ? 'multipart/form-data; boundary=x' : 'application/json' }
        : {};
      const res = await app.inject({ method: op.method as 'GET', url, headers, payload, remoteAddress });
      expect(res.statusCode, `${op.operationId} ${op.method} ${url}: ${res.body}`).toBe(401);
      expect(res.headers['content-type'], op.operationId).toBe('application/problem+json; charset=utf-8');
      expect(res.json().type, op.operationId).toBe(`${PROBLEMS}unauthorized`);
      expect(res.headers['www-authenticate'], op.operationId).toBeTruthy();
    }
  });

  it('A15 two credentials (X-API-Key and Authorization, or Authorization twice): 400 before any key is looked up', async () => {
    const w = await workspace(app);
    const key = (await newKey(w)).secret as string;
    for (const headers of [
      { 'x-api-key': key, authorization: `ApiKey ${key}` },
      { 'x-api-key': 'never-issued', authorization: w.owner },
      { 'x-api-key': key, authorization: 'Bearer nothing' },
    ]) {
      const res = await expectNoChange(app, () => contacts(headers));
      expect(expectProblem(res, 400, 'validation').errors).toEqual([{ pointer: '/header/authorization', detail: expect.stringContaining('only one') }]);
    }
    // Node keeps only the first Authorization of a request: the server counts them itself.
    const port = await listening();
    const twice = await rawRequest(
      port,
      `GET /api/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey ${key}\r\nAuthorization: ApiKey other\r\nConnection: close\r\n\r\n`,
    );
    expect(twice).toMatch(/^HTTP\/1\.1 400 /);
    expect(twice).toContain(`${PROBLEMS}validation`);
    // One credential still works.
    expect((await contacts({ 'x-api-key': key })).statusCode).toBe(200);
  });

  it('A16 an upload without a credential is answered 401 before its body is read', async () => {
    const port = await listening();
    // Announces 20 MB and sends none of it: the answer must come without waiting for the body.
    const head = `POST /api/connect/documents HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${20 * 1024 * 1024}\r\n\r\n`;
    const answer = await rawRequest(port, head, { endAfterWrite: false });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain(`${PROBLEMS}unauthorized`);
  });
});

let port: number | undefined;
async function listening(): Promise<number> {
  if (port === undefined) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  }
  return port;
}

/** Writes `text` on a new connection and resolves with what the server answers first. */
function rawRequest(port: number, text: string, { endAfterWrite = true } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(text);
      if (endAfterWrite) socket.end();
    });
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      // The whole problem body has arrived once its closing brace has.
      if (/\r\n\r\n[\s\S]*}\s*$/.test(answer)) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}
