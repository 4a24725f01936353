// Connect deliveries end to end: real HTTP to a local receiver, verified with Stripe's SDK and a
// plain HMAC (bad-inputs F1); retries keep id and bytes with a fresh signature (bad-inputs F8); rotation overlap (bad-inputs F9);
// disabling or deleting cancels (bad-inputs F10); the delivery log, redelivery and test events.
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { sameness } from '../account/support.js';
import { connectBearer, connectClient, grantClient } from '#test/support/connect.js';
import { startReceiver } from '#test/support/receiver.js';
import { appWithClock, createConnectEndpoint, pump, settled, tenant, type Clock, type Tenant } from './support.js';

const BASE = '/api/connect/webhook-endpoints';
const stripe = new Stripe('sk_test_x');
let app: FastifyInstance;
let clock: Clock;
let a: Tenant;
let b: Tenant;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
/** What the receiver answers next, per path. */
const answers = new Map<string, number>();

beforeAll(async () => {
  ({ app, clock } = await appWithClock());
  a = await tenant(app);
  b = await tenant(app);
  receiver = await startReceiver((req) => answers.get(String(req.headers['x-test-path'] ?? '')) ?? 200);
  // Attempts happen only when a test runs a batch, so what a test sees is what it caused.
  await app.platform.outbox.stop();
});
afterAll(() => receiver.close());

/** An endpoint at the receiver whose requests we can tell apart by a query string. */
async function endpoint(t: Tenant, events: string[] = ['*']) {
  const tag = Math.random().toString(36).slice(2);
  const created = await createConnectEndpoint(app, t, { url: `${receiver.url}?e=${tag}`, enabled_events: events });
  return { ...created, tag, received: () => receiver.received.filter((r) => r.body && deliveredTo(r, created.id, tag)) };
}
// The receiver records no URL; the event body names the endpoint only for test events, so the
// endpoint is recognised by the signature: only its secret verifies.
const secrets = new Map<string, string[]>();
function deliveredTo(r: { headers: Record<string, unknown>; body: string }, id: string, _tag: string): boolean {
  return (secrets.get(id) ?? []).some((secret) => verifies(r, secret));
}
function verifies(r: { headers: Record<string, unknown>; body: string }, secret: string): boolean {
  try {
    stripe.webhooks.constructEvent(r.body, String(r.headers['x-connect-signature']), secret, 300);
    return true;
  } catch {
    return false;
  }
}
async function tracked(t: Tenant, events?: string[]) {
  const e = await endpoint(t, events);
  secrets.set(e.id, [e.secret]);
  return e;
}

const sendTest = (t: Tenant, id: string) => app.inject({ method: 'POST', url: `${BASE}/${id}/test`, headers: t.connect });
const getDelivery = (t: Tenant, id: string, dlv: string) => app.inject({ method: 'GET', url: `${BASE}/${id}/deliveries/${dlv}`, headers: t.connect });

describe('F1 signatures a receiver can verify', () => {
  it('F1 a test event: Stripe’s constructEvent and a plain HMAC-SHA256 of "t.raw" both verify', async () => {
    const e = await tracked(a);
    const queued = await sendTest(a, e.id);
    expect(queued.statusCode).toBe(202);
    expect(queued.json()).toMatchObject({ endpoint_id: e.id, event_type: 'webhook_endpoint.test', status: 'pending', attempt: 0, response_status: null });
    await pump(app, () => e.received().length === 1, 'the test event');
    const got = e.received()[0];
    const header = String(got.headers['x-connect-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const event = stripe.webhooks.constructEvent(got.body, header, e.secret, 300);
    expect(event).toMatchObject({
      id: queued.json().event_id,
      type: 'webhook_endpoint.test',
      api_version: '2026-11-01',
      data: { webhook_endpoint_id: e.id, message: 'This is a test event from the Connect API.' },
    });
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
    expect(createHmac('sha256', e.secret).update(`${t}.${got.body}`).digest('hex')).toBe(v1);
    expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(300);
    expect(got.headers['x-connect-event-id']).toBe(queued.json().event_id);
    expect(got.headers['x-connect-event-type']).toBe('webhook_endpoint.test');
    expect(got.headers['content-type']).toBe('application/json');
    // The envelope in the spec's order: id, type, created, api_version, data.
    expect(Object.keys(JSON.parse(got.body))).toEqual(['id', 'type', 'created', 'api_version', 'data']);
    await pump(app, () => settled(app, queued.json().id));
    const log = (await getDelivery(a, e.id, queued.json().id)).json();
    expect(log).toMatchObject({ status: 'succeeded', attempt: 1, response_status: 200, response_body: 'ok', next_retry_at: null });
    expect(log.attempts).toHaveLength(1);
    expect(log.attempts[0]).toMatchObject({ attempt: 1, response_status: 200 });
  });

  it('F1 an event created with emitEvent reaches subscribed endpoints only, and verifies', async () => {
    const subscribed = await tracked(a, ['link.opened']);
    const other = await tracked(a, ['link.revoked']);
    const foreign = await tracked(b, ['*']);
    const data = { external_id: 'crm-1', recipient: { phone: '+4915112345678' } };
    const eventId = await app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'connect', type: 'link.opened', data }));
    expect(eventId).toMatch(/^evt_/);
    await pump(app, () => subscribed.received().length === 1, 'link.opened');
    const got = subscribed.received()[0];
    const event = stripe.webhooks.constructEvent(got.body, String(got.headers['x-connect-signature']), subscribed.secret, 300);
    expect(event).toMatchObject({ id: eventId, type: 'link.opened', data });
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(got.headers['x-connect-signature']))!;
    expect(createHmac('sha256', subscribed.secret).update(`${t}.${got.body}`).digest('hex')).toBe(v1);
    const rows = await app.platform.store.db.selectFrom('outbox').select('endpoint_id').where('event_id', '=', eventId!).execute();
    expect(rows.map((r) => r.endpoint_id)).not.toContain(other.id);
    expect(rows.map((r) => r.endpoint_id)).not.toContain(foreign.id);
  });

  it('F1 a client-level delivery (the same event to a client granted by the workspace): Stripe’s constructEvent verifies it', async () => {
    const client = await connectClient(app, b.workspaceId);
    const created = await app.inject({
      method: 'POST',
      url: '/api/connect/client/webhook-endpoints',
      headers: { authorization: client.basic },
      payload: { url: `${receiver.url}?e=client`, enabled_events: ['link.opened'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, secret } = created.json() as { id: string; secret: string };
    secrets.set(id, [secret]);
    const { grantId } = await grantClient(app, client.id, a.workspaceId);
    const data = { external_id: 'crm-2' };
    const eventId = await app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'connect', type: 'link.opened', data }));
    await pump(app, () => receiver.received.some((r) => deliveredTo(r, id, 'client')), 'the client delivery');
    const got = receiver.received.find((r) => deliveredTo(r, id, 'client'))!;
    const event = stripe.webhooks.constructEvent(got.body, String(got.headers['x-connect-signature']), secret, 300);
    expect(event).toMatchObject({ id: eventId, type: 'link.opened', org_id: a.workspaceId, grant_id: grantId, data });
    expect(got.headers['x-connect-event-type']).toBe('link.opened');
  });

  it('emitEvent refuses an event type the API does not declare, and a broadcast test event', async () => {
    const db = app.platform.store.db;
    await expect(emitEvent(db, { workspaceId: a.workspaceId, api: 'connect', type: 'message.received', data: {} })).rejects.toThrow(/not a connect event type/);
    await expect(emitEvent(db, { workspaceId: a.workspaceId, api: 'connect', type: 'webhook_endpoint.test', data: {} })).rejects.toThrow();
  });
});

describe('retries and the delivery log', () => {
  it('F8 several attempts of one event: same id in body and headers, identical bytes, fresh t and signature', async () => {
    const e = await tracked(a);
    answers.set('', 500);
    try {
      const queued = (await sendTest(a, e.id)).json();
      await pump(app, () => e.received().length === 1, 'attempt 1');
      await pump(app, () => settled(app, queued.id));
      const retrying = (await getDelivery(a, e.id, queued.id)).json();
      expect(retrying).toMatchObject({ status: 'retrying', attempt: 1, response_status: 500, failure_reason: 'http_status', response_body: 'ok' });
      const due = Date.parse(retrying.next_retry_at) - clock.now().getTime();
      expect(due).toBeGreaterThan(4_000); // 5 s ± 10 %
      expect(due).toBeLessThan(5_600);
      clock.advance(6_000);
      await pump(app, () => e.received().length === 2, 'attempt 2');
      const [first, second] = e.received();
      expect(second.body).toBe(first.body);
      expect(second.headers['x-connect-event-id']).toBe(first.headers['x-connect-event-id']);
      expect(JSON.parse(second.body).id).toBe(queued.event_id);
      const t1 = Number(/t=(\d+)/.exec(String(first.headers['x-connect-signature']))![1]);
      const t2 = Number(/t=(\d+)/.exec(String(second.headers['x-connect-signature']))![1]);
      expect(t2).toBeGreaterThanOrEqual(t1 + 5);
      expect(second.headers['x-connect-signature']).not.toBe(first.headers['x-connect-signature']);
      expect(createHmac('sha256', e.secret).update(`${t2}.${second.body}`).digest('hex')).toBe(
        /v1=([0-9a-f]{64})/.exec(String(second.headers['x-connect-signature']))![1],
      );
      await pump(app, () => settled(app, queued.id));
      const log = (await getDelivery(a, e.id, queued.id)).json();
      expect(log.attempt).toBe(2);
      expect(log.attempts.map((x: { response_status: number }) => x.response_status)).toEqual([500, 500]);
    } finally {
      answers.delete('');
    }
  });

  it('lists deliveries newest first, filtered by status, event type and event id, with a cursor bound to the endpoint', async () => {
    const e = await tracked(a);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await sendTest(a, e.id)).json().id);
    await pump(app, () => e.received().length === 3, 'three test events');
    for (const id of ids) await pump(app, () => settled(app, id));
    const page = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?limit=2`, headers: a.connect });
    expect(page.statusCode).toBe(200);
    expect(page.json().data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    const rest = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?limit=2&cursor=${page.json().next_cursor}`, headers: a.connect });
    expect(rest.json().data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    const other = await tracked(a);
    const foreignCursor = await app.inject({ method: 'GET', url: `${BASE}/${other.id}/deliveries?cursor=${page.json().next_cursor}`, headers: a.connect });
    expect(foreignCursor.statusCode).toBe(400);
    const succeeded = await app.inject({
      method: 'GET',
      url: `${BASE}/${e.id}/deliveries?status=succeeded&event_type=webhook_endpoint.test`,
      headers: a.connect,
    });
    expect(succeeded.json().data).toHaveLength(3);
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?status=failed`, headers: a.connect })).json().data).toHaveLength(0);
    const eventId = page.json().data[0].event_id;
    const byEvent = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?event_id=${eventId}`, headers: a.connect });
    expect(byEvent.json().data.map((d: { id: string }) => d.id)).toEqual([ids[2]]);
  });

  it('redelivery: a new delivery of the same event id and body bytes, freshly signed, linked to the first', async () => {
    const e = await tracked(a);
    const first = (await sendTest(a, e.id)).json();
    await pump(app, () => e.received().length === 1, 'first delivery');
    await pump(app, () => settled(app, first.id));
    clock.advance(2_000);
    const res = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${first.id}/redeliver`, headers: a.connect });
    expect(res.statusCode).toBe(202);
    const again = res.json();
    expect(again).toMatchObject({ event_id: first.event_id, redelivery_of: first.id, status: 'pending', attempt: 0, event_type: 'webhook_endpoint.test' });
    expect(again.id).not.toBe(first.id);
    await pump(app, () => e.received().length === 2, 'redelivery');
    const [one, two] = e.received();
    expect(two.body).toBe(one.body);
    expect(two.headers['x-connect-event-id']).toBe(first.event_id);
    expect(two.headers['x-connect-signature']).not.toBe(one.headers['x-connect-signature']);
    expect(stripe.webhooks.constructEvent(two.body, String(two.headers['x-connect-signature']), e.secret, 300).id).toBe(first.event_id);
    await pump(app, () => settled(app, again.id));
    expect((await getDelivery(a, e.id, again.id)).json()).toMatchObject({ status: 'succeeded', redelivery_of: first.id, event_id: first.event_id });
    // Both deliveries are listed under the event's id.
    const byEvent = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?event_id=${first.event_id}`, headers: a.connect });
    expect(
      byEvent
        .json()
        .data.map((d: { id: string }) => d.id)
        .sort(),
    ).toEqual([first.id, again.id].sort());
  });

  it('redelivering a delivery still pending answers 409 conflict', async () => {
    const e = await tracked(a);
    // Queued but not attempted: the row waits for the worker.
    const queued = (await sendTest(a, e.id)).json();
    const res = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${queued.id}/redeliver`, headers: a.connect });
    expect(res.statusCode).toBe(409);
    expect(res.json().type).toBe('https://chatapp.example/problems/conflict');
  });

  it('B1 another workspace’s delivery ids answer 404 like unknown ones, also under the right endpoint id', async () => {
    const e = await tracked(a);
    const queued = (await sendTest(a, e.id)).json();
    const mine = await tracked(b);
    const unknown = await getDelivery(b, mine.id, 'dlv_0000000000000000');
    expect(unknown.statusCode).toBe(404);
    for (const res of [
      await getDelivery(b, mine.id, queued.id),
      await getDelivery(b, e.id, queued.id),
      await app.inject({ method: 'POST', url: `${BASE}/${mine.id}/deliveries/${queued.id}/redeliver`, headers: b.connect }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toBe(unknown.json().type);
    }
    expect(sameness((await getDelivery(b, mine.id, queued.id)).json())).toEqual(sameness(unknown.json()));
    // A's delivery under A's other endpoint is not found either: deliveries belong to their endpoint.
    const sibling = await tracked(a);
    expect((await getDelivery(a, sibling.id, queued.id)).statusCode).toBe(404);
  });
});

describe('F9 rotation with overlap', () => {
  it('F9 two v1 values meanwhile, Stripe’s SDK accepts either secret; then only the new', async () => {
    const e = await tracked(a);
    const rotated = (await app.inject({ method: 'POST', url: `${BASE}/${e.id}/rotate-secret`, headers: a.connect, payload: { overlap_seconds: 60 } })).json();
    secrets.set(e.id, [e.secret, rotated.secret]);
    await sendTest(a, e.id);
    await pump(app, () => e.received().length === 1, 'delivery during the overlap');
    const during = e.received()[0];
    const header = String(during.headers['x-connect-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifies(during, e.secret)).toBe(true);
    expect(verifies(during, rotated.secret)).toBe(true);
    // The new secret's signature comes first.
    const [, t, first] = /^t=(\d+),v1=([0-9a-f]{64})/.exec(header)!;
    expect(createHmac('sha256', rotated.secret).update(`${t}.${during.body}`).digest('hex')).toBe(first);

    clock.advance(61_000);
    const view = (await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: a.connect })).json();
    expect(view.previous_secret_expires_at).toBeNull();
    await sendTest(a, e.id);
    await pump(app, () => e.received().length === 2, 'delivery after the overlap');
    const after = e.received()[1];
    expect(String(after.headers['x-connect-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const receivedAt = Math.floor(clock.now().getTime() / 1000);
    expect(() =>
      stripe.webhooks.constructEvent(after.body, String(after.headers['x-connect-signature']), rotated.secret, 300, undefined, receivedAt),
    ).not.toThrow();
    expect(() => stripe.webhooks.constructEvent(after.body, String(after.headers['x-connect-signature']), e.secret, 300, undefined, receivedAt)).toThrow();
  });
});

describe('F10 disabling or deleting cancels pending deliveries', () => {
  async function pendingDelivery(e: { id: string }) {
    const queued = (await sendTest(a, e.id)).json();
    // Due later, as a retry would be.
    await app.platform.store.db
      .updateTable('outbox')
      .set({ next_attempt_at: new Date(clock.now().getTime() + 60_000) })
      .where('id', '=', queued.id)
      .execute();
    return queued;
  }

  it('F10 disabled: rows cancelled, no further attempts; test events refused with 409', async () => {
    const e = await tracked(a);
    const queued = await pendingDelivery(e);
    const res = await app.inject({ method: 'PATCH', url: `${BASE}/${e.id}`, headers: a.connect, payload: { status: 'disabled' } });
    expect(res.json().status).toBe('disabled');
    clock.advance(120_000);
    for (let i = 0; i < 5; i++) await app.platform.outbox.runOnce();
    expect(e.received()).toHaveLength(0);
    const log = (await getDelivery(a, e.id, queued.id)).json();
    expect(log).toMatchObject({ status: 'cancelled', attempt: 0, next_retry_at: null });
    expect(log.failure_reason).toBeUndefined();
    const cancelled = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?status=cancelled`, headers: a.connect });
    expect(cancelled.json().data.map((d: { id: string }) => d.id)).toEqual([queued.id]);
    const test = await sendTest(a, e.id);
    expect(test.statusCode).toBe(409);
    const redeliver = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${queued.id}/redeliver`, headers: a.connect });
    expect(redeliver.statusCode).toBe(409);
  });

  it('F10 deleted: rows cancelled, no further attempts', async () => {
    const e = await tracked(a);
    const queued = await pendingDelivery(e);
    expect((await app.inject({ method: 'DELETE', url: `${BASE}/${e.id}`, headers: a.connect })).statusCode).toBe(204);
    clock.advance(120_000);
    for (let i = 0; i < 5; i++) await app.platform.outbox.runOnce();
    expect(e.received()).toHaveLength(0);
    const row = await app.platform.store.db.selectFrom('outbox').selectAll().where('id', '=', queued.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'failed', last_error: 'endpoint deleted or disabled', attempts: 0 });
    expect(await app.platform.store.db.selectFrom('delivery_attempts').select('id').where('outbox_id', '=', queued.id).execute()).toHaveLength(0);
  });

  it('F10 a row the outbox finds without destination (disabled behind its back) shows as cancelled', async () => {
    const e = await tracked(a);
    const queued = (await sendTest(a, e.id)).json();
    await app.platform.store.db.updateTable('webhook_endpoints').set({ status: 'disabled' }).where('id', '=', e.id).execute();
    await pump(app, () => settled(app, queued.id).catch(() => false));
    expect(e.received()).toHaveLength(0);
    expect((await getDelivery(a, e.id, queued.id)).json()).toMatchObject({ status: 'cancelled', attempt: 0 });
  });
});

describe('failures in the delivery log', () => {
  let f: Tenant;
  beforeAll(async () => {
    f = await tenant(app);
  });

  /** An endpoint whose stored URL is set behind the accept-time check, as DNS could change it. */
  async function pointedAt(url: string) {
    const e = await tracked(f);
    await app.platform.store.db.updateTable('webhook_endpoints').set({ url }).where('id', '=', e.id).execute();
    const queued = (await sendTest(f, e.id)).json();
    await pump(app, () => settled(app, queued.id), `an attempt to ${url}`);
    return (await getDelivery(f, e.id, queued.id)).json();
  }

  it('the URL is checked again at connect: a disallowed address fails as unsafe_url, without a request', async () => {
    const log = await pointedAt('http://0.0.0.0:9/hook');
    expect(log).toMatchObject({ status: 'retrying', attempt: 1, response_status: null, failure_reason: 'unsafe_url' });
    expect(log.attempts[0].failure_reason).toBe('unsafe_url');
  });

  it('a refused connection fails as connection_error', async () => {
    const { createServer } = await import('node:net');
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    expect(await pointedAt(`http://127.0.0.1:${port}/hook`)).toMatchObject({ status: 'retrying', response_status: null, failure_reason: 'connection_error' });
  });

  it('F6 a redirect is not followed and fails as redirect', async () => {
    const { createServer } = await import('node:http');
    let hits = 0;
    const target = createServer((_q, s) => void (hits++, s.end()));
    const redirecting = createServer((_q, s) => void (s.writeHead(307, { location: receiver.url }), s.end()));
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
    const { port } = redirecting.address() as { port: number };
    try {
      expect(await pointedAt(`http://127.0.0.1:${port}/hook`)).toMatchObject({ status: 'retrying', response_status: 307, failure_reason: 'redirect' });
      expect(hits).toBe(0);
    } finally {
      await new Promise<void>((r) => redirecting.close(() => r()));
      target.close();
    }
  });
});

// Last in the file: it moves the clock by a day and a half (tokens made before then expire).
describe('F4 the retry schedule', () => {
  it('F4 a receiver failing every time: 8 attempts on the schedule, then failed, all logged; redeliverable', async () => {
    const t = await tenant(app);
    const e = await tracked(t);
    answers.set('', 500);
    try {
      const queued = (await sendTest(t, e.id)).json();
      const schedule = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
      for (let attempt = 1; attempt <= 8; attempt++) {
        await pump(app, () => e.received().length === attempt, `attempt ${attempt}`);
        await pump(app, () => settled(app, queued.id));
        const row = await app.platform.store.db.selectFrom('outbox').selectAll().where('id', '=', queued.id).executeTakeFirstOrThrow();
        if (attempt === 8) break;
        const delay = row.next_attempt_at.getTime() - clock.now().getTime();
        const base = schedule[attempt - 1];
        expect(delay, `delay after attempt ${attempt}`).toBeGreaterThan(base * 0.9 - 2_000);
        expect(delay, `delay after attempt ${attempt}`).toBeLessThan(base * 1.1 + 1_000);
        // Not a moment early: nothing is sent before the delay has passed.
        clock.advance(delay - 1_000);
        await app.platform.outbox.runOnce();
        expect(e.received()).toHaveLength(attempt);
        clock.advance(1_500);
      }
      const headers = { authorization: `Bearer ${await connectBearer(app, t.workspaceId)}` };
      const log = (await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries/${queued.id}`, headers })).json();
      expect(log).toMatchObject({ status: 'failed', attempt: 8, next_retry_at: null, response_status: 500, failure_reason: 'http_status' });
      expect(log.attempts).toHaveLength(8);
      answers.delete('');
      const again = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${queued.id}/redeliver`, headers });
      expect(again.statusCode).toBe(202);
      await pump(app, () => e.received().length === 9, 'the redelivery');
      expect(e.received()[8].body).toBe(e.received()[0].body);
    } finally {
      answers.delete('');
    }
  });
});
