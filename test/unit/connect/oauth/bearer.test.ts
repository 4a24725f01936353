// The ConnectOAuth bearer scheme (bad-inputs A6, A7, A8): tokens made with test/support/connect.ts, checked
// through the platform's authenticator on a probe route that needs `analytics:read`, as the
// contract's analytics operations do.
import { describe, expect, it } from 'vitest';
import { connectBearer } from '#test/support/connect.js';
import { bearer, createKey, signUp } from '#test/unit/account/support.js';
import { buildProbeApp } from './support.js';

const { app, clock: time, probe } = await buildProbeApp();

describe('ConnectOAuth bearer', () => {
  it('accepts a live all-scope token and names the workspace, client and grant', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id);
    const res = await probe(bearer(token));
    expect(res.statusCode).toBe(200);
    expect(res.json().auth).toMatchObject({
      workspaceId: owner.workspace.id,
      kind: 'connect_token',
      scopes: ['documents:write', 'links:write', 'analytics:read', 'webhooks:write'],
    });
  });

  it('A6 expired bearer: 401 invalid_token', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id);
    time.now += 3600 * 1000 + 1;
    try {
      const res = await probe(bearer(token));
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
      expect(res.headers['content-type']).toContain('application/problem+json');
    } finally {
      time.now -= 3600 * 1000 + 1;
    }
  });

  it('A6 revoked bearer: 401 on the next call', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id);
    expect((await probe(bearer(token))).statusCode).toBe(200);
    await app.platform.store.db
      .updateTable('connect_tokens')
      .set({ revoked_at: new Date(time.now) })
      .where('workspace_id', '=', owner.workspace.id)
      .execute();
    const res = await probe(bearer(token));
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="connect", error="invalid_token"');
  });

  it('A7 bearer with only documents:write reading analytics: 403 insufficient_scope naming the scope', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id, ['documents:write']);
    const res = await probe(bearer(token));
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="connect", error="insufficient_scope", scope="analytics:read"');
    expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/forbidden', required_scope: 'analytics:read' });
    expect(res.json().detail).toContain('analytics:read');
  });

  it('A8 credentials on the wrong API: a bearer as X-API-Key, a Messaging key or owner JWT as bearer: 401', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id);
    const key = await createKey(app, owner.token);
    for (const headers of [
      { 'x-api-key': token },
      bearer(key.secret),
      bearer(owner.token),
      { authorization: `Basic ${token}` },
      bearer(`${token}x`),
      bearer(''),
    ]) {
      const res = await probe(headers as Record<string, string>);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
    }
  });

  it('A8 a Connect bearer on the owner API: 401', async () => {
    const owner = await signUp(app);
    const token = await connectBearer(app, owner.workspace.id);
    const res = await app.inject({ method: 'GET', url: '/api/account/api-keys', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
  });
});
