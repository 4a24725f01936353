// The Account API's eight operations, happy paths and their own refusals.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { PASSWORD_COST } from '#server/lib/secrets.js';
import { PASSWORD, bearer, createKey, signUp, type SignedUp } from './support.js';

const KEY_SECRET = /^mk_[0-9A-Za-z]{40}$/;

describe('Account API', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  beforeAll(async () => {
    app = await buildShared({ overrides: { passwordCost: PASSWORD_COST } }); // the stored hash is checked
    a = await signUp(app, 'alpha');
  });

  it('createWorkspace creates the workspace and owner and answers a first session', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/workspaces',
      payload: { email: 'Maria@Acme-Travel.Example', password: PASSWORD, name: 'Maria', workspace_name: 'Acme Travel', workspace_slug: 'acme-travel' },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.workspace).toEqual({ id: expect.stringMatching(/^ws_/), name: 'Acme Travel', slug: 'acme-travel', created_at: expect.any(String) });
    expect(body.owner).toEqual({ id: expect.stringMatching(/^usr_/), email: 'maria@acme-travel.example', name: 'Maria', created_at: expect.any(String) });
    expect(body.session).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, expires_at: expect.any(String) });
    expect(JSON.stringify(body)).not.toContain(PASSWORD);
    const stored = await app.platform.store.db.selectFrom('owners').select('password_hash').where('id', '=', body.owner.id).executeTakeFirstOrThrow();
    expect(stored.password_hash).toMatch(/^scrypt\$131072\$8\$1\$/);
  });

  it('createWorkspace answers 409 for a taken email (any case) or slug, naming no constraint', async () => {
    const base = { password: PASSWORD, name: 'X', workspace_name: 'X' };
    for (const payload of [
      { ...base, email: a.email.toUpperCase(), workspace_slug: 'fresh-slug-1' },
      { ...base, email: 'fresh@example.test', workspace_slug: a.workspace.slug },
    ]) {
      const res = await app.inject({ method: 'POST', url: '/api/account/workspaces', payload });
      expect(res.statusCode).toBe(409);
      expect(res.json().type).toBe('https://chatapp.example/problems/conflict');
      expect(res.body).not.toMatch(/owners_|workspaces_|_key|unique/i);
    }
  });

  it('createWorkspace refuses unknown fields and a short password (400 validation)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/workspaces',
      payload: { email: 'z@example.test', password: 'short', name: 'Z', workspace_name: 'Z', workspace_slug: 'zzz', isAdmin: true },
    });
    expect(res.statusCode).toBe(400);
    const pointers = res.json().errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/body/password', '/body/isAdmin']));
  });

  it('createSession signs the owner in, email compared case-insensitively', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: a.email.toUpperCase(), password: PASSWORD } });
    expect(res.statusCode).toBe(201);
    const session = res.json();
    expect(session).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(new Date(session.expires_at).getTime()).toBeGreaterThan(Date.now());
    const me = await app.inject({ url: '/api/account/me', headers: bearer(session.access_token) });
    expect(me.statusCode).toBe(200);
  });

  it('getAccount answers the owner and their workspace', async () => {
    const res = await app.inject({ url: '/api/account/me', headers: bearer(a.token) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ owner: a.owner, workspace: a.workspace });
  });

  it('createApiKey answers the secret once, with defaults for kind and scopes', async () => {
    const key = await createKey(app, a.token, { name: 'CRM integration' });
    expect(key).toEqual({
      id: expect.stringMatching(/^key_/),
      name: 'CRM integration',
      kind: 'messaging',
      scopes: ['messaging:read', 'messaging:write'],
      prefix: key.secret.slice(0, 11),
      status: 'active',
      created_at: expect.any(String),
      last_used_at: null,
      expires_at: null,
      revoked_at: null,
      secret: expect.stringMatching(KEY_SECRET),
    });
  });

  it('createApiKey refuses an expiry in the past naming /body/expires_at', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/api-keys',
      headers: bearer(a.token),
      payload: { name: 'old', expires_at: '2020-01-01T00:00:00Z' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/body/expires_at', detail: 'must be in the future' }]);
  });

  it('L1 L2 getApiKey and listApiKeys never show the secret; the store holds only its digest', async () => {
    const key = await createKey(app, a.token, { name: 'read only', scopes: ['messaging:read'] });
    const one = await app.inject({ url: `/api/account/api-keys/${key.id}`, headers: bearer(a.token) });
    expect(one.statusCode).toBe(200);
    const { secret, ...withoutSecret } = key;
    expect(one.json()).toEqual(withoutSecret);
    const list = await app.inject({ url: '/api/account/api-keys', headers: bearer(a.token) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(secret);
    expect(list.json().data[0]).toEqual(withoutSecret); // newest first
    const rows = await app.platform.store.db.selectFrom('api_keys').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(rows.find((r) => r.id === key.id)?.digest).toBe(app.platform.secrets.digest(secret));
  });

  it('listApiKeys pages newest first with a cursor and filters by status', async () => {
    const owner = await signUp(app, 'pager');
    const made: Awaited<ReturnType<typeof createKey>>[] = [];
    for (let i = 0; i < 5; i++) made.push(await createKey(app, owner.token, { name: `k${i}` }));
    await app.inject({ method: 'POST', url: `/api/account/api-keys/${made[0]!.id}/revoke`, headers: bearer(owner.token) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { statusCode: number; json(): any } = await app.inject({
        url: '/api/account/api-keys',
        query: { limit: '2', ...(cursor ? { cursor } : {}) },
        headers: bearer(owner.token),
      });
      expect(res.statusCode).toBe(200);
      const page = res.json();
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((k: { id: string }) => k.id));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
    } while (cursor);
    // every key once, newest first (keys made within one millisecond are ordered by id)
    expect([...seen].sort()).toEqual(made.map((k) => k.id).sort());
    const created = seen.map((id) => made.find((k) => k.id === id)!.created_at);
    expect(created).toEqual([...created].sort().reverse());
    const revoked = await app.inject({ url: '/api/account/api-keys?status=revoked', headers: bearer(owner.token) });
    expect(revoked.json().data.map((k: { id: string }) => k.id)).toEqual([made[0]!.id]);
    const active = await app.inject({ url: '/api/account/api-keys?status=active', headers: bearer(owner.token) });
    expect(active.json().data).toHaveLength(4);
  });

  it('rotateApiKey keeps id, name and scopes and answers a new secret', async () => {
    const key = await createKey(app, a.token, { name: 'rotating' });
    const res = await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: bearer(a.token) });
    expect(res.statusCode).toBe(200);
    const rotated = res.json();
    expect(rotated).toMatchObject({ id: key.id, name: 'rotating', scopes: key.scopes, status: 'active' });
    expect(rotated.secret).toMatch(KEY_SECRET);
    expect(rotated.secret).not.toBe(key.secret);
    expect(rotated.prefix).toBe(rotated.secret.slice(0, 11));
  });

  it('revokeApiKey revokes once; again changes nothing; a revoked key cannot be rotated (409)', async () => {
    const key = await createKey(app, a.token, { name: 'doomed' });
    const first = await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/revoke`, headers: bearer(a.token) });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ id: key.id, status: 'revoked', revoked_at: expect.any(String) });
    const again = await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/revoke`, headers: bearer(a.token) });
    expect(again.json()).toEqual(first.json());
    const rotate = await app.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/rotate`, headers: bearer(a.token) });
    expect(rotate.statusCode).toBe(409);
    expect(rotate.json().type).toBe('https://chatapp.example/problems/conflict');
  });

  it('B8 a malformed key id answers 400, an unknown one 404', async () => {
    expect((await app.inject({ url: '/api/account/api-keys/abc', headers: bearer(a.token) })).statusCode).toBe(400);
    const unknown = await app.inject({ url: '/api/account/api-keys/key_0000000000000000', headers: bearer(a.token) });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ type: 'https://chatapp.example/problems/not-found', detail: 'No API key with this id.' });
  });
});
