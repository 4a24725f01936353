// Messaging webhook endpoints on a par with Connect's: update (disable cancels), test events,
// the delivery log with its attempts, and redelivery, over the same outbox, signed
// `X-Messaging-Signature` in the Messaging envelope.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { startReceiver } from '#test/support/receiver.js';
import { sameness } from '../account/support.js';
import { appWithClock, pump, settled, tenant, type Clock, type Tenant } from './support.js';

const BASE = '/api/webhook-endpoints';
const stripe = new Stripe('sk_test_x');
let app: FastifyInstance;
let clock: Clock;
let a: Tenant;
let b: Tenant;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
/** What the receiver answers next (by the endpoint's query tag in the URL is not recorded; one status for all). */
let answer = 200;

beforeAll(async () => {
  ({ app, clock } = await appWithClock());
  a = await tenant(app);
  b = await tenant(app);
  receiver = await startReceiver(() => answer);
  await app.platform.outbox.stop(); // attempts only when a test runs a batch
});
afterAll(() => receiver.close());

async function endpoint(t: Tenant, events = ['message.received']) {
  const res = await app.inject({ method: 'POST', url: BASE, headers: t.messaging, payload: { url: receiver.url, enabled_events: events } });
  expect(res.statusCode).toBe(201);
  const created = res.json() as { id: string; secret: string; status: string };
  const received = () =>
    receiver.received.filter((r) => {
      try {
        stripe.webhooks.constructEvent(r.body, String(r.headers['x-messaging-signature']), created.secret, 300);
        return true;
      } catch {
        return false;
      }
    });
  return { ...created, received };
}

const sendTest = (t: Tenant, id: string) => app.inject({ method: 'POST', url: `${BASE}/${id}/test`, headers: t.messaging });
const getDelivery = (t: Tenant, id: string, dlv: string) => app.inject({ method: 'GET', url: `${BASE}/${id}/deliveries/${dlv}`, headers: t.messaging });
const patch = (t: Tenant, id: string, payload: Record<string, unknown>) => app.inject({ method: 'PATCH', url: `${BASE}/${id}`, headers: t.messaging, payload });

describe('Messaging endpoint update', () => {
  it('changes URL, events and description; status is shown', async () => {
    const e = await endpoint(a);
    expect(e.status).toBe('enabled');
    const res = await patch(a, e.id, { url: 'https://crm.example.com/v2', enabled_events: ['campaign.completed'], description: 'v2' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: e.id,
      url: 'https://crm.example.com/v2',
      enabled_events: ['campaign.completed'],
      description: 'v2',
      status: 'enabled',
    });
    const cleared = await patch(a, e.id, { description: null });
    expect(cleared.json().description).toBeNull();
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: a.messaging })).json()).toMatchObject({ url: 'https://crm.example.com/v2' });
  });

  it('bad updates change nothing: unknown or repeated event, unsafe URL, unknown field, foreign endpoint', async () => {
    const e = await endpoint(a);
    const before = (await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: a.messaging })).json();
    const cases: [Record<string, unknown>, number, string?][] = [
      [{ enabled_events: ['link.opened'] }, 400],
      [{ enabled_events: ['webhook_endpoint.test'] }, 400],
      [{ enabled_events: ['message.received', 'message.received'] }, 400, '/body/enabled_events'],
      [{ url: 'http://169.254.169.254/latest/meta-data/' }, 422, '/body/url'],
      [{ url: 'file:///etc/passwd' }, 400],
      [{ status: 'paused' }, 400],
      [{ secret: 'whsec_mine' }, 400],
    ];
    for (const [payload, status, pointer] of cases) {
      const res = await patch(a, e.id, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      if (pointer) expect(res.json().errors[0].pointer).toBe(pointer);
    }
    const foreign = await patch(b, e.id, { status: 'disabled' });
    const unknown = await patch(b, 'whe_0000000000000000', { status: 'disabled' });
    expect(foreign.statusCode).toBe(404);
    expect(sameness(foreign.json())).toEqual(sameness(unknown.json()));
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}`, headers: a.messaging })).json()).toEqual(before);
  });

  it('F10 disabling cancels what waits and stops events; test and redelivery answer 409; enabling resumes', async () => {
    const e = await endpoint(a, ['campaign.failed']);
    const future = new Date(clock.now().getTime() + 60_000);
    const eventId = await app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'messaging', type: 'campaign.failed', data: {}, at: future }));
    const queued = (await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?event_id=${eventId}`, headers: a.messaging })).json().data[0];
    expect(queued).toMatchObject({ status: 'pending', event_type: 'campaign.failed' });
    expect((await patch(a, e.id, { status: 'disabled' })).json().status).toBe('disabled');
    clock.advance(120_000);
    for (let i = 0; i < 3; i++) await app.platform.outbox.runOnce();
    expect(e.received()).toHaveLength(0);
    expect((await getDelivery(a, e.id, queued.id)).json()).toMatchObject({ status: 'cancelled', attempt: 0, next_retry_at: null });
    expect(
      await app.platform.store.db
        .transaction()
        .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'messaging', type: 'campaign.failed', data: {} })),
    ).toBeNull();
    const test = await sendTest(a, e.id);
    expect(test.statusCode).toBe(409);
    expect(test.json().type).toBe('https://chatapp.example/problems/conflict');
    expect((await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${queued.id}/redeliver`, headers: a.messaging })).statusCode).toBe(409);
    expect((await patch(a, e.id, { status: 'enabled' })).json().status).toBe('enabled');
    expect((await sendTest(a, e.id)).statusCode).toBe(202);
  });
});

describe('Messaging test events and the delivery log', () => {
  it('a test event reaches this endpoint only, in the Messaging envelope, and is logged with its attempt', async () => {
    const e = await endpoint(a);
    const sibling = await endpoint(a);
    const queued = await sendTest(a, e.id);
    expect(queued.statusCode).toBe(202);
    expect(queued.json()).toMatchObject({ endpoint_id: e.id, event_type: 'webhook_endpoint.test', status: 'pending', attempt: 0, response_status: null });
    await pump(app, () => e.received().length === 1, 'the test event');
    const got = e.received()[0]!;
    const event = stripe.webhooks.constructEvent(got.body, String(got.headers['x-messaging-signature']), e.secret, 300);
    expect(event).toMatchObject({
      id: queued.json().event_id,
      type: 'webhook_endpoint.test',
      workspace_id: a.workspaceId,
      data: { webhook_endpoint_id: e.id, message: 'This is a test event from the Messaging API.' },
    });
    expect(Object.keys(JSON.parse(got.body))).toEqual(['id', 'type', 'created', 'workspace_id', 'data']);
    expect(got.headers['x-messaging-event-id']).toBe(queued.json().event_id);
    expect(sibling.received()).toHaveLength(0);
    await pump(app, () => settled(app, queued.json().id));
    const log = (await getDelivery(a, e.id, queued.json().id)).json();
    expect(log).toMatchObject({ status: 'succeeded', attempt: 1, response_status: 200, response_body: 'ok', next_retry_at: null });
    expect(log.attempts).toEqual([expect.objectContaining({ attempt: 1, response_status: 200 })]);
  });

  it('a failing receiver: retrying with the reason; list filters by status, type and event; cursor bound to the endpoint', async () => {
    const e = await endpoint(a, ['message.received']);
    answer = 500;
    try {
      const eventId = await app.platform.store.db
        .transaction()
        .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'messaging', type: 'message.received', data: { n: 1 } }));
      await pump(app, () => e.received().length === 1, 'attempt 1');
      const first = (await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?event_id=${eventId}`, headers: a.messaging })).json().data[0];
      await pump(app, () => settled(app, first.id));
      const retrying = (await getDelivery(a, e.id, first.id)).json();
      expect(retrying).toMatchObject({ status: 'retrying', attempt: 1, response_status: 500, failure_reason: 'http_status', event_type: 'message.received' });
      expect(retrying.next_retry_at).not.toBeNull();
      const byStatus = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?status=retrying&event_type=message.received`, headers: a.messaging });
      expect(byStatus.json().data.map((d: { id: string }) => d.id)).toEqual([first.id]);
      const redeliverWhileRetrying = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${first.id}/redeliver`, headers: a.messaging });
      expect(redeliverWhileRetrying.statusCode).toBe(409);
    } finally {
      answer = 200;
    }
    await sendTest(a, e.id);
    const page = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?limit=1`, headers: a.messaging });
    expect(page.json()).toMatchObject({ data: [{ event_type: 'webhook_endpoint.test' }], has_more: true });
    const rest = await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?limit=1&cursor=${page.json().next_cursor}`, headers: a.messaging });
    expect(rest.json()).toMatchObject({ data: [{ event_type: 'message.received' }], has_more: false });
    const other = await endpoint(a);
    const foreignCursor = await app.inject({ method: 'GET', url: `${BASE}/${other.id}/deliveries?cursor=${page.json().next_cursor}`, headers: a.messaging });
    expect(foreignCursor.statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries?status=sometimes`, headers: a.messaging })).statusCode).toBe(400);
  });

  it('redelivery: same event id and body bytes, freshly signed, linked to the first', async () => {
    const e = await endpoint(a);
    const first = (await sendTest(a, e.id)).json();
    await pump(app, () => e.received().length === 1, 'first delivery');
    await pump(app, () => settled(app, first.id));
    clock.advance(2_000);
    const res = await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${first.id}/redeliver`, headers: a.messaging });
    expect(res.statusCode).toBe(202);
    const again = res.json();
    expect(again).toMatchObject({ event_id: first.event_id, redelivery_of: first.id, status: 'pending', attempt: 0 });
    await pump(app, () => e.received().length === 2, 'redelivery');
    const [one, two] = e.received();
    expect(two!.body).toBe(one!.body);
    expect(two!.headers['x-messaging-event-id']).toBe(first.event_id);
    expect(two!.headers['x-messaging-signature']).not.toBe(one!.headers['x-messaging-signature']);
    await pump(app, () => settled(app, again.id));
    expect((await getDelivery(a, e.id, again.id)).json()).toMatchObject({ status: 'succeeded', redelivery_of: first.id });
  });

  it('B1 another workspace’s endpoint or delivery answers 404 like an unknown one; nothing is queued', async () => {
    const e = await endpoint(a);
    const queued = (await sendTest(a, e.id)).json();
    const mine = await endpoint(b);
    const unknown = await getDelivery(b, mine.id, 'dlv_0000000000000000');
    expect(unknown.statusCode).toBe(404);
    const rows = async () => (await app.platform.store.db.selectFrom('outbox').select('id').where('endpoint_id', '=', e.id).execute()).length;
    const before = await rows();
    for (const res of [
      await getDelivery(b, mine.id, queued.id),
      await getDelivery(b, e.id, queued.id),
      await sendTest(b, e.id),
      await app.inject({ method: 'GET', url: `${BASE}/${e.id}/deliveries`, headers: b.messaging }),
      await app.inject({ method: 'POST', url: `${BASE}/${mine.id}/deliveries/${queued.id}/redeliver`, headers: b.messaging }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toBe(unknown.json().type);
    }
    expect(await rows()).toBe(before);
    // A delivery belongs to its endpoint: not found under a sibling of the same workspace.
    expect((await getDelivery(a, (await endpoint(a)).id, queued.id)).statusCode).toBe(404);
  });
});
