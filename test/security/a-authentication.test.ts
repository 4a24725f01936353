// Catalogue group A (authentication) against the real APIs and the shared fixture: every refusal
// is one 401 body (no hint why), changes nothing, and names the scheme in WWW-Authenticate.
import { afterAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { findByDigest } from '../../server/auth/api-keys.js';
import { issueOwnerToken } from '../../server/auth/owner-jwt.js';
import { SCOPES, issueTokens } from '../../server/apis/connect/oauth/tokens.js';
import { hashPassword } from '../../server/lib/secrets.js';
import { newId } from '../../server/lib/ids.js';
import { buildShared } from '../helper.js';
import { connectBearer } from '../support/connect.js';
import { sameness } from '../unit/account/support.js';
import { basic } from '../unit/connect/oauth/support.js';
import { expectNoChange, expectProblem, workspace, type Workspace } from './support.js';
import { expectProblems, recordErrors } from './logged-app.js';

const clock = { now: Date.now() };
const app = await buildShared({ overrides: { now: () => new Date(clock.now) } });
const seen = recordErrors(app);
afterAll(() => {
  expect(expectProblems(seen)).toBeGreaterThan(20); // M1 over every error answer of this file
});

const contacts = (headers: Record<string, string>, url = '/api/contacts') => app.inject({ url, headers });
const documents = (authorization: string) => app.inject({ url: '/api/connect/documents', headers: { authorization } });
/** A Messaging key made through the owner API, as a customer would. */
const newKey = async (w: Workspace) => (await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: w.owner }, payload: { name: 'k' } })).json();

/** A 401 that changed nothing; its body without the per-request fields. */
async function refused(act: () => Promise<LightMyRequestResponse>, challenge?: string | RegExp) {
  // Keys record last_used_at on success only; sign-in throttles count failures by design (A10).
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

    const login = (await app.inject({ method: 'POST', url: '/api/login/apps', headers: { authorization: w.owner }, payload: { name: 'Shop', webhook_destination: 'hosted' } })).json();
    const status = (k: string) => app.inject({ url: '/v1/auth/chatapp/status/lse_00000000000000000000', headers: { 'x-api-key': k } });
    expect((await status(login.api_key)).statusCode).toBe(404); // authenticated: the session is unknown
    const newLogin = (await app.inject({ method: 'POST', url: `/api/login/apps/${login.id}/rotate-api-key`, headers: { authorization: w.owner } })).json().api_key;
    await refused(() => status(login.api_key));
    expect((await status(newLogin)).statusCode).toBe(404);
  });

  it('A4 a valid key only in the query (?api_key=) or a cookie: 401, keys come from headers only', async () => {
    const w = await workspace(app);
    for (const name of ['api_key', 'apiKey', 'x-api-key', 'key']) await refused(() => contacts({}, `/api/contacts?${name}=${w.key}`));
    await refused(() => contacts({ cookie: `api_key=${w.key}; x-api-key=${w.key}` }));
  });

  it('A5 Authorization: apikey <key> accepted (schemes are case-insensitive); ApiKey<key> and Bearer <api key> 401', async () => {
    const w = await workspace(app);
    for (const scheme of ['apikey', 'ApiKey', 'APIKEY']) expect((await contacts({ authorization: `${scheme} ${w.key}` })).statusCode).toBe(200);
    for (const value of [`ApiKey${w.key}`, `Bearer ${w.key}`, `ApiKey ${w.key} extra`, `Basic ${w.key}`]) await refused(() => contacts({ authorization: value }));
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
    const client = (await app.inject({ method: 'POST', url: '/api/connect/clients', headers: { authorization: w.owner }, payload: { name: 'CRM', redirect_uris: ['https://crm.test/cb'] } })).json();
    const db = app.platform.store.db;
    const grant = { id: newId('grt'), workspace_id: w.workspaceId, client_id: client.client_id };
    await db.insertInto('connect_grants').values({ ...grant, owner_id: w.ownerId, scopes: [...SCOPES], created_at: new Date(clock.now), updated_at: new Date(clock.now) }).execute();
    const { access_token } = await issueTokens(db, app.platform.secrets, new Date(clock.now), grant, newId('fam'), [...SCOPES]);
    expect((await documents(`Bearer ${access_token}`)).statusCode).toBe(200);
    const revoked = await app.inject({ method: 'POST', url: '/api/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(client.client_id, client.client_secret) }, payload: `token=${access_token}&token_type_hint=access_token` });
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
    await refused(() => app.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': w.key, 'content-type': 'application/json' }, payload: { token: 'eyJ.x.y' } }));
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
    const otherKey = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode('another-key-another-key-another-key-0123'));
    for (const token of [none, expired, otherKey]) await refused(() => me(token), /^Bearer realm="account"/);
  });

  it('A10 owner sign-in: wrong password 10 times and an unknown email: identical 401s; then 429 for that account and IP', { timeout: 300_000 }, async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const { email } = await db.selectFrom('owners').select('email').where('id', '=', w.ownerId).executeTakeFirstOrThrow();
    // Hashed at the app's cost, as its sign-up would (an unknown email's check runs at that cost too).
    await db.updateTable('owners').set({ password_hash: await hashPassword('the right password', app.platform.passwordCost) }).where('id', '=', w.ownerId).execute();
    const signIn = (address: string, password: string, ip: string) => app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: address, password }, remoteAddress: ip });
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
    await app.platform.store.db.updateTable('owners').set({ workspace_id: (await workspace(app)).workspaceId }).where('id', '=', w.ownerId).execute();
    await refused(() => app.inject({ url: '/api/account/me', headers: { authorization: w.owner } }));
  });
});
