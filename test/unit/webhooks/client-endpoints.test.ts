// Client-level webhook endpoints: a Connect client registers endpoints with its own credentials
// (HTTP Basic) and receives the events of every workspace that granted it `webhooks:write`,
// each naming the workspace and grant, plus `grant.created` and `grant.revoked` (owner, reuse,
// the client's own revocation). Deliveries verify with Stripe's constructEvent. A client's
// endpoint never receives another client's workspaces' events, and another client's endpoint
// ids answer 404 (bad-inputs B, F).
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { connectClient, grantClient, type TestClient } from '#test/support/connect.js';
import { startReceiver, type Received } from '#test/support/receiver.js';
import { appWithClock, pump, tenant, type Tenant } from './support.js';

const BASE = '/api/connect/client/webhook-endpoints';
const stripe = new Stripe('sk_test_x');
let app: FastifyInstance;
let dev: Tenant; // registers the clients
let w1: Tenant; // grants client 1
let w2: Tenant; // grants client 2
let c1: TestClient;
let c2: TestClient;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  ({ app } = await appWithClock());
  await app.platform.outbox.stop(); // attempts happen only when a test runs a batch
  [dev, w1, w2] = [await tenant(app), await tenant(app), await tenant(app)];
  c1 = await connectClient(app, dev.workspaceId);
  c2 = await connectClient(app, dev.workspaceId); // a sibling: same registering workspace
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const as = (client: TestClient) => ({ authorization: client.basic });

async function endpoint(client: TestClient, events: string[] = ['*']) {
  const res = await app.inject({ method: 'POST', url: BASE, headers: as(client), payload: { url: receiver.url, enabled_events: events } });
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as { id: string; secret: string };
  return { ...created, received: () => receiver.received.filter((r) => verifies(r, created.secret)).map((r) => JSON.parse(r.body)) };
}

function verifies(r: Received, secret: string): boolean {
  try {
    stripe.webhooks.constructEvent(r.body, String(r.headers['x-connect-signature']), secret, 300);
    return true;
  } catch {
    return false;
  }
}

/** A Connect event of `workspaceId` as the content area emits it. */
async function linkRevoked(workspaceId: string, marker: string) {
  await app.platform.store.db
    .transaction()
    .execute((tx) => emitEvent(tx, { workspaceId, api: 'connect', type: 'link.revoked', data: { external_id: marker }, at: app.platform.now() }));
}

describe('client credentials', () => {
  it('creates and lists endpoints with HTTP Basic; wrong secret, a workspace token, a public client: the same 401', async () => {
    const e = await endpoint(c1);
    expect(e.secret).toMatch(/^whsec_/);
    const list = await app.inject({ url: BASE, headers: as(c1) });
    expect(list.json().data.map((x: { id: string }) => x.id)).toContain(e.id);
    const wrong = `Basic ${Buffer.from(`${c1.id}:cs_wrong`).toString('base64')}`;
    for (const authorization of [wrong, dev.connect.authorization!, '']) {
      const res = await app.inject({ url: BASE, headers: authorization ? { authorization } : {} });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.headers['www-authenticate']).toBe('Basic realm="connect"');
    }
    const pub = await app.inject({
      method: 'POST',
      url: '/api/connect/clients',
      headers: dev.owner,
      payload: { name: 'Mobile', redirect_uris: ['https://crm.test/cb'], client_type: 'public' },
    });
    expect(pub.statusCode, pub.body).toBe(201);
    const asPublic = await app.inject({ url: BASE, headers: { authorization: `Basic ${Buffer.from(`${pub.json().client_id}:`).toString('base64')}` } });
    expect(asPublic.statusCode).toBe(401);
  });

  it('a workspace token does not see client endpoints, nor a client the workspace ones; a sibling client’s id is 404', async () => {
    const mine = await endpoint(c1);
    for (const res of [
      await app.inject({ url: `/api/connect/webhook-endpoints/${mine.id}`, headers: dev.connect }),
      await app.inject({ url: `${BASE}/${mine.id}`, headers: as(c2) }),
      await app.inject({ method: 'DELETE', url: `${BASE}/${mine.id}`, headers: as(c2) }),
      await app.inject({ method: 'POST', url: `${BASE}/${mine.id}/rotate-secret`, headers: as(c2), payload: {} }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().detail).toBe('No webhook endpoint with this id.');
    }
    expect((await app.inject({ url: `${BASE}/${mine.id}`, headers: as(c1) })).statusCode).toBe(200);
  });

  it('grant events are for client endpoints: a workspace endpoint naming one is refused with 400', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/connect/webhook-endpoints',
      headers: dev.connect,
      payload: { url: receiver.url, enabled_events: ['grant.revoked'] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/enabled_events');
  });
});

describe('events of every granting workspace, and only those', () => {
  it('grant.created, then the workspace’s events, each naming org_id, org_slug and grant_id; verified with Stripe', async () => {
    const e = await endpoint(c1);
    const grant = await grantClient(app, c1.id, w1.workspaceId);
    await linkRevoked(w1.workspaceId, 'w1-event');
    await pump(app, () => e.received().length >= 2, 'grant.created and link.revoked');
    const slug = (await app.platform.store.db.selectFrom('workspaces').select('slug').where('id', '=', w1.workspaceId).executeTakeFirstOrThrow()).slug;
    // Delivery order is not guaranteed (receivers order by `created`): each is found by type.
    const created = e.received().find((x) => x.type === 'grant.created');
    const revoked = e.received().find((x) => x.type === 'link.revoked');
    expect(created).toMatchObject({
      type: 'grant.created',
      org_id: w1.workspaceId,
      org_slug: slug,
      grant_id: grant.grantId,
      data: { grant: { id: grant.grantId, client_id: c1.id, status: 'active', revoked_at: null } },
    });
    expect(Object.keys(created)).toEqual(['id', 'type', 'created', 'api_version', 'org_id', 'org_slug', 'grant_id', 'data']);
    expect(revoked).toMatchObject({ type: 'link.revoked', org_id: w1.workspaceId, grant_id: grant.grantId, data: { external_id: 'w1-event' } });
  });

  it('bad-inputs B: a client endpoint never receives another client’s workspaces’ events, nor those of a grant without webhooks:write', async () => {
    const e1 = await endpoint(c1);
    const e2 = await endpoint(c2);
    const w3 = await tenant(app);
    await grantClient(app, c2.id, w2.workspaceId);
    await grantClient(app, c1.id, w3.workspaceId, ['documents:write', 'links:write']);
    await linkRevoked(w2.workspaceId, 'only-for-c2');
    await linkRevoked(w3.workspaceId, 'no-webhooks-scope');
    await pump(app, () => e2.received().some((x) => x.data.external_id === 'only-for-c2'), 'c2 gets its workspace’s event');
    await pump(
      app,
      async () => !(await app.platform.store.db.selectFrom('outbox').select('id').where('status', '=', 'pending').executeTakeFirst()),
      'all sent',
    );
    const seen1 = e1.received();
    expect(seen1.some((x) => x.org_id === w2.workspaceId)).toBe(false);
    expect(seen1.some((x) => x.data?.external_id === 'only-for-c2' || x.data?.external_id === 'no-webhooks-scope')).toBe(false);
    expect(seen1.some((x) => x.type === 'grant.created' && x.org_id === w3.workspaceId)).toBe(true); // its own grant, all the same
    expect(e2.received().every((x) => x.type === 'webhook_endpoint.test' || x.org_id === w2.workspaceId)).toBe(true);
    // Nor is a row written for it: the outbox holds no delivery of w2's event to c1's endpoint.
    const rows = await app.platform.store.db.selectFrom('outbox').select(['endpoint_id', 'payload']).where('endpoint_id', '=', e1.id).execute();
    expect(rows.filter((r) => r.payload.includes('only-for-c2'))).toEqual([]);
  });

  it('grant.revoked: by the owner, after refresh-token reuse, and when the client revokes its last refresh token', async () => {
    const e = await endpoint(c2, ['grant.revoked']);
    const reasons: string[] = [];
    // The owner revokes.
    const w4 = await tenant(app);
    const g1 = await grantClient(app, c2.id, w4.workspaceId);
    expect((await app.inject({ method: 'POST', url: `/api/connect/grants/${g1.grantId}/revoke`, headers: w4.owner })).statusCode).toBe(200);
    reasons.push('owner_revoked');
    // Reuse: a retired refresh token presented again after its successor was used.
    const w5 = await tenant(app);
    const g2 = await grantClient(app, c2.id, w5.workspaceId);
    const token = (refresh_token: string) =>
      app.inject({
        method: 'POST',
        url: '/api/oauth/token',
        headers: { authorization: c2.basic, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token }).toString(),
      });
    const first = await token(g2.refresh_token);
    expect(first.statusCode, first.body).toBe(200);
    expect((await token(first.json().refresh_token)).statusCode).toBe(200);
    expect((await token(g2.refresh_token)).json().error).toBe('invalid_grant');
    reasons.push('refresh_token_reuse');
    // The client revokes its only refresh token (RFC 7009).
    const w6 = await tenant(app);
    const g3 = await grantClient(app, c2.id, w6.workspaceId);
    const revoked = await app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: { authorization: c2.basic, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: g3.refresh_token }).toString(),
    });
    expect(revoked.statusCode).toBe(200);
    reasons.push('client_revoked');
    await pump(app, () => e.received().length >= 3, 'three grant.revoked');
    const got = e.received();
    const byWorkspace = Object.fromEntries(got.map((x) => [x.org_id, x.data.reason]));
    expect(byWorkspace).toEqual({ [w4.workspaceId]: reasons[0], [w5.workspaceId]: reasons[1], [w6.workspaceId]: reasons[2] });
    expect(got.every((x) => x.type === 'grant.revoked' && x.data.grant.status === 'revoked')).toBe(true);
    // The grants ended: their tokens are refused, and no more workspace events reach the client.
    const grants = await app.platform.store.db
      .selectFrom('connect_grants')
      .select(['status', 'revoke_reason'])
      .where('id', 'in', [g1.grantId, g2.grantId, g3.grantId])
      .execute();
    expect(grants.every((g) => g.status === 'revoked')).toBe(true);
    expect((await app.inject({ url: '/api/connect/documents', headers: { authorization: `Bearer ${g3.access_token}` } })).statusCode).toBe(401);
  });

  it('revoking one of two live chains keeps the grant: no grant.revoked', async () => {
    const w7 = await tenant(app);
    const a1 = await grantClient(app, c1.id, w7.workspaceId);
    await grantClient(app, c1.id, w7.workspaceId); // a second consent: same grant, another chain
    await app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: { authorization: c1.basic, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: a1.refresh_token }).toString(),
    });
    const grant = await app.platform.store.db.selectFrom('connect_grants').select('status').where('id', '=', a1.grantId).executeTakeFirstOrThrow();
    expect(grant.status).toBe('active');
  });
});

describe('the endpoint machinery of workspace endpoints', () => {
  it('test event, delivery log, redelivery and rotation with overlap work for a client endpoint', async () => {
    const e = await endpoint(c1, ['grant.created']);
    const queued = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/test`, headers: as(c1) });
    expect(queued.statusCode, queued.body).toBe(202);
    const dlv = queued.json().id as string;
    await pump(app, () => e.received().some((x) => x.type === 'webhook_endpoint.test'), 'the test event');
    const test = e.received().find((x) => x.type === 'webhook_endpoint.test');
    expect(test.data.webhook_endpoint_id).toBe(e.id);
    expect(test.org_id).toBeUndefined(); // about the endpoint, not a workspace
    await pump(app, async () => (await app.inject({ url: `${BASE}/${e.id}/deliveries/${dlv}`, headers: as(c1) })).json().status === 'succeeded', 'logged');
    const log = await app.inject({ url: `${BASE}/${e.id}/deliveries`, headers: as(c1) });
    expect(log.json().data.map((d: { id: string }) => d.id)).toEqual([dlv]);
    expect((await app.inject({ url: `${BASE}/${e.id}/deliveries/${dlv}`, headers: as(c2) })).statusCode).toBe(404);
    const again = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${dlv}/redeliver`, headers: as(c1) });
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json()).toMatchObject({ redelivery_of: dlv, event_id: queued.json().event_id });
    const rotated = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/rotate-secret`, headers: as(c1), payload: { overlap_seconds: 3600 } });
    expect(rotated.statusCode).toBe(200);
    const fresh = rotated.json().secret as string;
    await app.inject({ method: 'POST', url: `${BASE}/${e.id}/test`, headers: as(c1) });
    await pump(app, () => receiver.received.some((r) => verifies(r, fresh)), 'signed with the new secret');
    const last = receiver.received.filter((r) => verifies(r, fresh))[0]!;
    expect(verifies(last, e.secret)).toBe(true); // the overlap: both secrets sign
    const removed = await app.inject({ method: 'DELETE', url: `${BASE}/${e.id}`, headers: as(c1) });
    expect(removed.statusCode).toBe(204);
  });
});
