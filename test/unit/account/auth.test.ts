// Authentication catalogue, group A, for the Account API and for Messaging keys (through the
// stand-in routes of harness.ts), plus bad-inputs B1 for API keys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { authHarness } from './harness.js';
import { bearer, createKey, sameness, signUp, type SignedUp } from './support.js';

const UNAUTHORIZED = 'https://chatapp.example/problems/unauthorized';

describe('authentication', () => {
  let app: FastifyInstance;
  let api: FastifyInstance; // Messaging and Login stand-ins
  let a: SignedUp;
  let b: SignedUp;
  let clock = Date.now();
  beforeAll(async () => {
    app = await buildShared({ overrides: { now: () => new Date(clock) } });
    api = await authHarness(app);
    a = await signUp(app, 'authz-a');
    b = await signUp(app, 'authz-b');
  });
  afterAll(async () => {
    await api.close();
  });

  const contacts = (headers: Record<string, string>, url = '/api/contacts') => api.inject({ url, headers });

  it('A1 no credential: 401 unauthorized with the scheme each API accepts', async () => {
    const messaging = await contacts({});
    expect(messaging.statusCode).toBe(401);
    expect(messaging.headers['www-authenticate']).toBe('ApiKey realm="messaging"');
    expect(messaging.json()).toMatchObject({ type: UNAUTHORIZED, status: 401 });
    const account = await app.inject({ url: '/api/account/api-keys' });
    expect(account.statusCode).toBe(401);
    expect(account.headers['www-authenticate']).toBe('Bearer realm="account"');
    expect(account.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(account.json()).toMatchObject({ type: UNAUTHORIZED, status: 401, instance: '/api/account/api-keys' });
  });

  it('a valid Messaging key in X-API-Key or Authorization: ApiKey opens Messaging for its workspace', async () => {
    const key = await createKey(app, a.token);
    for (const headers of [{ 'x-api-key': key.secret }, { authorization: `ApiKey ${key.secret}` }] as Record<string, string>[]) {
      const res = await contacts(headers);
      expect(res.statusCode).toBe(200);
      expect(res.json().auth).toEqual({ workspaceId: a.workspace.id, kind: 'api_key', keyId: key.id, scopes: key.scopes });
    }
  });

  it('A2 never issued, revoked, 8 KB long, non-ASCII: one 401 body, never 500', async () => {
    const revoked = await createKey(app, a.token);
    await app.inject({ method: 'POST', url: `/api/account/api-keys/${revoked.id}/revoke`, headers: bearer(a.token) });
    const values = [`mk_${'A'.repeat(40)}`, revoked.secret, `mk_${'x'.repeat(8 * 1024)}`, `mk_${'é'.repeat(40)}`, 'mk_\u00ff\u00fe'];
    const bodies = [];
    for (const value of values) {
      const res = await contacts({ 'x-api-key': value });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('ApiKey realm="messaging"');
      bodies.push(sameness(res.json()));
    }
    expect(new Set(bodies.map((body) => JSON.stringify(body))).size).toBe(1);
    expect(JSON.stringify(bodies[0])).not.toMatch(/revoked|expired|unknown/i);
  });

  it('A2 an expired key gets the same 401 as an unknown one', async () => {
    const key = await createKey(app, a.token, { name: 'short-lived', expires_at: new Date(clock + 60_000).toISOString() });
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(200);
    clock += 61_000;
    const expired = await contacts({ 'x-api-key': key.secret });
    const unknown = await contacts({ 'x-api-key': `mk_${'B'.repeat(40)}` });
    expect(expired.statusCode).toBe(401);
    expect(sameness(expired.json())).toEqual(sameness(unknown.json()));
    const listed = await app.inject({ url: `/api/account/api-keys/${key.id}`, headers: bearer(a.token) });
    expect(listed.json().status).toBe('expired');
  });

  it('A3 after rotating, the old value is 401 at once and the new one works', async () => {
    const key = await createKey(app, a.token);
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(200); // now cached
    const rotated = (await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: bearer(a.token) })).json();
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(401);
    expect((await contacts({ 'x-api-key': rotated.secret })).statusCode).toBe(200);
  });

  it('L5 a revoked key is refused at once, cache or not', async () => {
    const key = await createKey(app, a.token);
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(200);
    await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/revoke`, headers: bearer(a.token) });
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(401);
  });

  it('A4 a valid key in the query or a cookie is 401', async () => {
    const key = await createKey(app, a.token);
    expect((await contacts({}, `/api/contacts?api_key=${key.secret}`)).statusCode).toBe(401);
    expect((await contacts({ cookie: `api_key=${key.secret}; x-api-key=${key.secret}` })).statusCode).toBe(401);
  });

  it('A5 the ApiKey scheme is case-insensitive; ApiKey<key> and Bearer <api key> are 401', async () => {
    const key = await createKey(app, a.token);
    expect((await contacts({ authorization: `apikey ${key.secret}` })).statusCode).toBe(200);
    expect((await contacts({ authorization: `APIKEY ${key.secret}` })).statusCode).toBe(200);
    expect((await contacts({ authorization: `ApiKey${key.secret}` })).statusCode).toBe(401);
    expect((await contacts({ authorization: `Bearer ${key.secret}` })).statusCode).toBe(401);
  });

  it('A8 credentials on the wrong API are 401', async () => {
    const key = await createKey(app, a.token);
    // an owner JWT as X-API-Key, and as ApiKey, on Messaging
    expect((await contacts({ 'x-api-key': a.token })).statusCode).toBe(401);
    expect((await contacts({ authorization: `ApiKey ${a.token}` })).statusCode).toBe(401);
    // a Messaging key as the owner's bearer, and on the Login API's verify-token
    const asBearer = await app.inject({ url: '/api/account/me', headers: bearer(key.secret) });
    expect(asBearer.statusCode).toBe(401);
    expect((await app.inject({ url: '/api/account/me', headers: { 'x-api-key': key.secret } })).statusCode).toBe(401);
    const login = await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': key.secret } });
    expect(login.statusCode).toBe(401);
    // an owner JWT where only a Connect token would do (no ConnectOAuth verifier registered yet)
    const connect = await api.inject({ url: '/connect-only', headers: bearer(a.token) });
    expect(connect.statusCode).toBe(401);
    expect(connect.headers['www-authenticate']).toBeTruthy();
  });

  it('A11 a key one character off a real one is 401', async () => {
    const key = await createKey(app, a.token);
    const last = key.secret.at(-1)!;
    const offByOne = key.secret.slice(0, -1) + (last === 'a' ? 'b' : 'a');
    expect((await contacts({ 'x-api-key': offByOne })).statusCode).toBe(401);
  });

  it('a key without messaging:write is 403 naming the scope on writes, and may read', async () => {
    const key = await createKey(app, a.token, { name: 'reader', scopes: ['messaging:read'] });
    expect((await contacts({ 'x-api-key': key.secret })).statusCode).toBe(200);
    const write = await api.inject({ method: 'POST', url: '/api/contacts', headers: { 'x-api-key': key.secret } });
    expect(write.statusCode).toBe(403);
    expect(write.json()).toMatchObject({ type: 'https://chatapp.example/problems/forbidden', required_scope: 'messaging:write' });
    const writer = await createKey(app, a.token, { name: 'writer', scopes: ['messaging:write'] });
    expect((await api.inject({ method: 'POST', url: '/api/contacts', headers: { 'x-api-key': writer.secret } })).statusCode).toBe(200);
    expect((await contacts({ 'x-api-key': writer.secret })).json()).toMatchObject({ required_scope: 'messaging:read' });
  });

  it('last_used_at is written on use, then at most once a minute', async () => {
    const key = await createKey(app, a.token);
    const lastUsed = async () => (await app.inject({ url: `/api/account/api-keys/${key.id}`, headers: bearer(a.token) })).json().last_used_at;
    await contacts({ 'x-api-key': key.secret });
    const first = await lastUsed();
    expect(first).toBe(new Date(clock).toISOString());
    clock += 30_000;
    await contacts({ 'x-api-key': key.secret });
    expect(await lastUsed()).toBe(first);
    clock += 31_000;
    await contacts({ 'x-api-key': key.secret });
    expect(await lastUsed()).toBe(new Date(clock).toISOString());
  });

  it("B1 workspace B gets 404 for A's key id, the same body as an unknown id", async () => {
    const key = await createKey(app, a.token);
    const unknownId = 'key_0000000000000000';
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/rotate'],
      ['POST', '/revoke'],
    ] as const) {
      const theirs = await app.inject({ method, url: `/api/account/api-keys/${key.id}${suffix}`, headers: bearer(b.token) });
      const unknown = await app.inject({ method, url: `/api/account/api-keys/${unknownId}${suffix}`, headers: bearer(b.token) });
      expect(theirs.statusCode).toBe(404);
      expect(sameness(theirs.json())).toEqual(sameness(unknown.json()));
    }
    // and A's key is untouched
    const mine = await app.inject({ url: `/api/account/api-keys/${key.id}`, headers: bearer(a.token) });
    expect(mine.json()).toMatchObject({ status: 'active', prefix: key.prefix });
    const listB = await app.inject({ url: '/api/account/api-keys', headers: bearer(b.token) });
    expect(listB.json().data).toEqual([]);
  });
});
