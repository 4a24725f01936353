// Messaging webhook endpoints: create, list, get, delete, rotate; deliveries signed
// `X-Messaging-Signature` (Stripe's scheme) with `X-Messaging-Event-Id`, in the Messaging envelope.
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { startReceiver } from '#test/support/receiver.js';
import { createKey, sameness, signUp } from '../account/support.js';
import { appWithClock, pump, tenant, type Clock, type Tenant } from './support.js';

const BASE = '/api/webhook-endpoints';
const stripe = new Stripe('sk_test_x');
let app: FastifyInstance;
let clock: Clock;
let a: Tenant;
let b: Tenant;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  ({ app, clock } = await appWithClock());
  a = await tenant(app);
  b = await tenant(app);
  receiver = await startReceiver();
  await app.platform.outbox.stop(); // attempts only when a test runs a batch
});
afterAll(() => receiver.close());

const create = (t: Tenant, payload: Record<string, unknown>, headers = t.messaging) => app.inject({ method: 'POST', url: BASE, headers, payload });
const rowCount = async () =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

async function endpoint(t: Tenant, events = ['message.received']) {
  const res = await create(t, { url: receiver.url, enabled_events: events });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: string; secret: string; secret_hint: string };
}

const emit = (workspaceId: string, type: string, data: unknown) =>
  app.platform.store.db.transaction().execute((tx) => emitEvent(tx, { workspaceId, api: 'messaging', type, data }));

describe('Messaging webhook endpoints', () => {
  it('creates with an API key: secret once, hint of it, no secret elsewhere (L1)', async () => {
    const res = await create(a, {
      url: 'https://crm.example.com/hooks/chatapp',
      enabled_events: ['message.received', 'message.status_updated'],
      description: 'CRM inbox sync',
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      url: 'https://crm.example.com/hooks/chatapp',
      enabled_events: ['message.received', 'message.status_updated'],
      description: 'CRM inbox sync',
    });
    expect(body.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(body.secret_hint).toBe(body.secret.slice(0, 10));
    for (const url of [`${BASE}/${body.id}`, BASE]) {
      const read = await app.inject({ method: 'GET', url, headers: a.messaging });
      expect(read.statusCode).toBe(200);
      expect(read.body).not.toContain(body.secret);
      expect(read.body).not.toContain('"secret"');
    }
  });

  it('an owner session may manage endpoints too', async () => {
    const res = await create(a, { url: 'https://crm.example.com/owner', enabled_events: ['campaign.completed'] }, a.owner);
    expect(res.statusCode).toBe(201);
  });

  it('L2 the row holds the secret encrypted only', async () => {
    const created = await endpoint(a);
    const row = await app.platform.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.secret);
    expect(app.platform.secrets.decrypt(row.secret_enc)).toBe(created.secret);
  });

  it('lists newest first with a cursor; only the workspace’s Messaging endpoints', async () => {
    const t = await tenant(app);
    const ids = [(await endpoint(t)).id, (await endpoint(t)).id];
    const first = await app.inject({ method: 'GET', url: `${BASE}?limit=1`, headers: t.messaging });
    expect(first.json()).toMatchObject({ data: [{ id: ids[1] }], has_more: true });
    const second = await app.inject({ method: 'GET', url: `${BASE}?limit=1&cursor=${first.json().next_cursor}`, headers: t.messaging });
    expect(second.json()).toMatchObject({ data: [{ id: ids[0] }], has_more: false, next_cursor: null });
    // A Connect endpoint of the same workspace is not a Messaging one.
    const connect = await app.inject({
      method: 'POST',
      url: '/api/connect/webhook-endpoints',
      headers: t.connect,
      payload: { url: 'https://crm.test/c', enabled_events: ['*'] },
    });
    expect((await app.inject({ method: 'GET', url: `${BASE}/${connect.json().id}`, headers: t.messaging })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: BASE, headers: t.messaging })).json().data).toHaveLength(2);
  });

  it('refuses an event type twice (400 naming enabled_events), and an unknown one', async () => {
    const twice = await create(a, { url: 'https://crm.example.com/x', enabled_events: ['message.received', 'message.received'] });
    expect(twice.statusCode).toBe(400);
    expect(twice.json().errors[0].pointer).toBe('/body/enabled_events');
    expect((await create(a, { url: 'https://crm.example.com/x', enabled_events: ['link.opened'] })).statusCode).toBe(400);
    expect((await create(a, { url: 'https://crm.example.com/x', enabled_events: ['*'] })).statusCode).toBe(400);
  });

  it('a read-only key cannot create: 403; nothing created', async () => {
    const signed = await signUp(app);
    const key = await createKey(app, signed.token, { name: 'read', scopes: ['messaging:read'] });
    const before = await rowCount();
    const res = await app.inject({
      method: 'POST',
      url: BASE,
      headers: { 'x-api-key': key.secret },
      payload: { url: 'https://crm.example.com/r', enabled_events: ['message.received'] },
    });
    expect(res.statusCode).toBe(403);
    expect(await rowCount()).toBe(before);
    expect((await app.inject({ method: 'GET', url: BASE, headers: { 'x-api-key': key.secret } })).statusCode).toBe(200);
  });

  it('G URL policy on create: 422 unsafe-url naming url for metadata; 400 for schemes, CR/LF and length; nothing created', async () => {
    const before = await rowCount();
    const cases: [string, number][] = [
      ['http://169.254.169.254/latest/meta-data/', 422],
      ['http://[fd00:ec2::254]/', 422],
      ['http://0.0.0.0/', 422],
      ['file:///etc/passwd', 400],
      ['gopher://crm.example.com/', 400],
      ['javascript:alert(1)', 400],
      ['https://crm.example.com:65536/', 400],
      ['https://crm.example.com/a\r\nb', 400],
      [`https://crm.example.com/${'a'.repeat(2040)}`, 400],
    ];
    for (const [url, status] of cases) {
      const res = await create(a, { url, enabled_events: ['message.received'] });
      expect(res.statusCode, url.slice(0, 50)).toBe(status);
      if (status === 422) expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/unsafe-url', errors: [{ pointer: '/body/url' }] });
    }
    expect(await rowCount()).toBe(before);
  });

  it('B1 another workspace’s endpoint: 404 like an unknown id, for get, delete and rotate; nothing changes', async () => {
    const created = await endpoint(a);
    const unknown = await app.inject({ method: 'GET', url: `${BASE}/whe_0000000000000000`, headers: b.messaging });
    for (const call of [
      { method: 'GET', url: `${BASE}/${created.id}` },
      { method: 'DELETE', url: `${BASE}/${created.id}` },
      { method: 'POST', url: `${BASE}/${created.id}/rotate-secret` },
    ] as const) {
      const res = await app.inject({ ...call, headers: b.messaging });
      expect(res.statusCode).toBe(404);
      expect(sameness(res.json())).toEqual(sameness(unknown.json()));
    }
    const row = await app.platform.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.previous_secret_enc).toBeNull();
  });
});

describe('Messaging deliveries', () => {
  it('signs X-Messaging-Signature (Stripe’s scheme) with X-Messaging-Event-Id, in the Messaging envelope', async () => {
    const t = await tenant(app);
    const before = receiver.received.length;
    const e = await endpoint(t, ['message.received']);
    const other = await endpoint(b, ['message.received']);
    const data = { message: { id: 'msg_3Wq7Kd2NxL9vT4sR', type: 'text', content: { text: 'hi' } } };
    const eventId = await emit(t.workspaceId, 'message.received', data);
    await pump(app, () => receiver.received.length > before, 'message.received');
    await app.platform.outbox.runOnce();
    const got = receiver.received.slice(before);
    expect(got).toHaveLength(1); // B's endpoint got nothing
    const header = String(got[0].headers['x-messaging-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(got[0].headers['x-messaging-event-id']).toBe(eventId);
    const event = stripe.webhooks.constructEvent(got[0].body, header, e.secret, 300);
    expect(event).toMatchObject({ id: eventId, type: 'message.received', workspace_id: t.workspaceId, data });
    expect(Object.keys(JSON.parse(got[0].body))).toEqual(['id', 'type', 'created', 'workspace_id', 'data']);
    const [, ts, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
    expect(createHmac('sha256', e.secret).update(`${ts}.${got[0].body}`).digest('hex')).toBe(v1);
    expect(() => stripe.webhooks.constructEvent(got[0].body, header, other.secret, 300)).toThrow();
  });

  it('events of a type the endpoint did not subscribe to are not sent', async () => {
    const t = await tenant(app);
    await endpoint(t, ['campaign.completed']);
    expect(await emit(t.workspaceId, 'message.received', {})).toBeNull();
  });

  it('F9 rotate: the previous secret signs alongside for 24 hours, then only the new', async () => {
    const t = await tenant(app);
    const e = await endpoint(t, ['template.status_updated']);
    const res = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/rotate-secret`, headers: t.messaging });
    expect(res.statusCode).toBe(200);
    const rotated = res.json();
    expect(rotated).toMatchObject({ endpoint_id: e.id });
    expect(rotated.secret).toMatch(/^whsec_/);
    const overlap = Date.parse(rotated.previous_secret_expires_at) - clock.now().getTime();
    expect(overlap).toBeGreaterThan(86_390_000);
    expect(overlap).toBeLessThanOrEqual(86_400_000);
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: t.messaging })).json().secret_hint).toBe(rotated.secret.slice(0, 10));

    let before = receiver.received.length;
    await emit(t.workspaceId, 'template.status_updated', { template_id: 'tpl_5Hc9Wn2KqL7tR3vX' });
    await pump(app, () => receiver.received.length > before, 'delivery during the overlap');
    const during = receiver.received.at(-1)!;
    const header = String(during.headers['x-messaging-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(stripe.webhooks.constructEvent(during.body, header, e.secret, 300).type).toBe('template.status_updated');
    expect(stripe.webhooks.constructEvent(during.body, header, rotated.secret, 300).type).toBe('template.status_updated');

    clock.advance(86_401_000);
    before = receiver.received.length;
    await emit(t.workspaceId, 'template.status_updated', { template_id: 'tpl_5Hc9Wn2KqL7tR3vX' });
    await pump(app, () => receiver.received.length > before, 'delivery after the overlap');
    const after = receiver.received.at(-1)!;
    const afterHeader = String(after.headers['x-messaging-signature']);
    expect(afterHeader).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const receivedAt = Math.floor(clock.now().getTime() / 1000);
    expect(() => stripe.webhooks.constructEvent(after.body, afterHeader, rotated.secret, 300, undefined, receivedAt)).not.toThrow();
    expect(() => stripe.webhooks.constructEvent(after.body, afterHeader, e.secret, 300, undefined, receivedAt)).toThrow();
  });

  it('F10 deleting cancels pending deliveries: no further attempts', async () => {
    const t = await tenant(app);
    const e = await endpoint(t, ['campaign.failed']);
    const future = new Date(clock.now().getTime() + 60_000);
    const eventId = await app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId: t.workspaceId, api: 'messaging', type: 'campaign.failed', data: {}, at: future }));
    expect((await app.inject({ method: 'DELETE', url: `${BASE}/${e.id}`, headers: t.messaging })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: t.messaging })).statusCode).toBe(404);
    const before = receiver.received.length;
    clock.advance(120_000);
    for (let i = 0; i < 3; i++) await app.platform.outbox.runOnce();
    expect(receiver.received.slice(before).filter((r) => r.headers['x-messaging-event-id'] === eventId)).toHaveLength(0);
    const row = await app.platform.store.db.selectFrom('outbox').selectAll().where('event_id', '=', eventId!).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'failed', last_error: 'endpoint deleted or disabled', attempts: 0 });
  });
});
