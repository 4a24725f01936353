// The durable outbox: signed delivery, the retry schedule on a fake clock, a restart in the
// middle of retries, expired leases, cancelled rows, and no row delivered twice by two workers.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { enqueue, Outbox, type Poster } from '#server/outbox/outbox.js';
import { MAX_ATTEMPTS } from '#server/outbox/schedule.js';
import { stripeStyleHeader } from '#server/lib/signatures.js';
import type { Store } from '#server/store/db.js';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { startReceiver } from '#test/support/receiver.js';

const SECRET = 'whsec_test_secret_value_0123456789';
const post: Poster = async (url, headers, body) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, redirect: 'manual' });
  return { status: res.status, body: await res.text() };
};

let store: Store;
let clock: Date;
const now = () => new Date(clock);

beforeAll(async () => {
  store = await openTestStore();
  await store.db.insertInto('workspaces').values({ id: 'ws_outbox000001', name: 'A', slug: 'outbox-a' }).execute();
}, 60_000);
afterAll(async () => store?.close());
beforeEach(async () => {
  clock = new Date('2026-11-23T10:00:00Z');
  await store.db.deleteFrom('outbox').execute();
});

function outbox(url: string | null, instanceId = 'i1', poster: Poster = post) {
  const box = new Outbox({ store, post: poster, instanceId, now, random: () => 0.5 });
  box.register('test', async () =>
    url ? { url, headers: (payload, at) => ({ 'x-connect-signature': stripeStyleHeader([SECRET], payload, Math.floor(at.getTime() / 1000)) }) } : null,
  );
  return box;
}

async function event(id: string) {
  const payload = JSON.stringify({ id, type: 'link.opened', created: 1795428000, data: { external_id: 'crm-1' } });
  await enqueue(
    store.db,
    { workspaceId: 'ws_outbox000001', endpointKind: 'test', endpointId: 'whe_test00000001', eventId: id, eventType: 'link.opened', payload },
    now(),
  );
  return payload;
}

describe('outbox', () => {
  it('delivers a signed event that Stripe’s SDK verifies, and logs the attempt', async () => {
    const receiver = await startReceiver();
    const payload = await event('evt_signed000001');
    expect(await outbox(receiver.url).runOnce()).toBe(1);
    await receiver.close();
    expect(receiver.received).toHaveLength(1);
    const { headers, body } = receiver.received[0];
    expect(body).toBe(payload);
    const header = String(headers['x-connect-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    // Stripe checks the timestamp against its own clock: sign at the real now for this check.
    const fresh = stripeStyleHeader([SECRET], body, Math.floor(Date.now() / 1000));
    const verified = new Stripe('sk_test_x').webhooks.constructEvent(body, fresh, SECRET, 300);
    expect(verified.id).toBe('evt_signed000001');
    const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200 });
    const attempts = await store.db.selectFrom('delivery_attempts').selectAll().where('outbox_id', '=', row.id).execute();
    expect(attempts).toHaveLength(1);
  });

  it('retries a failing receiver on the schedule, then marks the row failed', async () => {
    const receiver = await startReceiver(() => 500);
    await event('evt_retry0000001');
    const box = outbox(receiver.url);
    const times: number[] = [];
    for (let i = 0; i < MAX_ATTEMPTS + 2; i++) {
      const claimed = await box.runOnce();
      if (claimed) times.push(clock.getTime());
      const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
      if (row.status !== 'pending') break;
      expect(await box.runOnce()).toBe(0); // not due before its time
      clock = new Date(row.next_attempt_at);
    }
    await receiver.close();
    const start = new Date('2026-11-23T10:00:00Z').getTime();
    const offsets = times.map((t) => (t - start) / 1000);
    // jitter fixed at the midpoint (random 0.5) → the schedule exactly
    expect(offsets).toEqual([0, 5, 305, 2105, 9305, 27305, 63305, 99305]);
    const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, last_status_code: 500 });
    expect(receiver.received).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
  });

  it('counts each delay from the end of the attempt: a receiver timing out after 10 s is retried 10 s + the delay after it started', async () => {
    await event('evt_slowfail0001');
    // Each attempt takes 10 s on the clock, then fails as the webhook client's timeout does.
    const starts: number[] = [];
    const slow: Poster = async () => {
      starts.push(clock.getTime());
      clock = new Date(clock.getTime() + 10_000);
      return { error: 'timeout' };
    };
    const box = outbox('http://receiver.test/hook', 'i1', slow);
    const schedule = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect(await box.runOnce(), `attempt ${attempt}`).toBe(1);
      const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
      const ended = starts[attempt - 1]! + 10_000;
      expect(clock.getTime()).toBe(ended);
      if (attempt === MAX_ATTEMPTS) {
        expect(row).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, last_error: 'timeout' });
        expect(row.finished_at!.getTime()).toBe(ended);
        break;
      }
      // jitter fixed at the midpoint (random 0.5): due exactly the schedule's delay after the end
      expect(row.next_attempt_at.getTime() - ended, `after attempt ${attempt}`).toBe(schedule[attempt - 1]);
      clock = new Date(row.next_attempt_at.getTime() - 1);
      expect(await box.runOnce(), `not a moment before attempt ${attempt + 1}`).toBe(0);
      clock = new Date(row.next_attempt_at);
    }
    const { id } = await store.db.selectFrom('outbox').select('id').executeTakeFirstOrThrow();
    const attempts = await store.db.selectFrom('delivery_attempts').select('started_at').where('outbox_id', '=', id).orderBy('attempt').execute();
    expect(attempts.map((a) => a.started_at.getTime())).toEqual(starts); // the log keeps when each attempt started
  });

  it('survives a restart in the middle of retries: a new worker delivers the same event and body', async () => {
    let fail = true;
    const receiver = await startReceiver(() => (fail ? 503 : 200));
    const payload = await event('evt_restart00001');
    const first = outbox(receiver.url, 'before-crash');
    await first.runOnce();
    fail = false;
    clock = new Date(clock.getTime() + 5_000);
    const second = outbox(receiver.url, 'after-restart');
    expect(await second.runOnce()).toBe(1);
    await receiver.close();
    expect(receiver.received.map((r) => r.body)).toEqual([payload, payload]);
    const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
    expect(row.status).toBe('succeeded');
  });

  it('takes over a row whose worker died holding the lease, once the lease has passed', async () => {
    const receiver = await startReceiver();
    await event('evt_lease0000001');
    await store.db
      .updateTable('outbox')
      .set({ lease_until: new Date(clock.getTime() + 60_000), leased_by: 'dead', attempts: 1 })
      .execute();
    const box = outbox(receiver.url, 'survivor');
    expect(await box.runOnce()).toBe(0);
    clock = new Date(clock.getTime() + 61_000);
    expect(await box.runOnce()).toBe(1);
    await receiver.close();
    expect(receiver.received).toHaveLength(1);
  });

  it('cancels rows of a deleted endpoint without sending anything', async () => {
    await event('evt_gone00000001');
    expect(await outbox(null).runOnce()).toBe(1);
    const row = await store.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'failed', last_error: 'endpoint deleted or disabled' });
  });

  it('queues one row per event and endpoint, however often the event is enqueued', async () => {
    await event('evt_dupe00000001');
    await event('evt_dupe00000001');
    const rows = await store.db.selectFrom('outbox').select('id').execute();
    expect(rows).toHaveLength(1);
  });

  it(`never delivers one row twice with two workers${onPostgres ? '' : ' (trivial on PGlite: one connection)'}`, async () => {
    const receiver = await startReceiver();
    for (let i = 0; i < 40; i++) await event(`evt_race${String(i).padStart(8, '0')}`);
    const a = outbox(receiver.url, 'a');
    const b = outbox(receiver.url, 'b');
    let claimed = 1;
    while (claimed) claimed = (await Promise.all([a.runOnce(), b.runOnce()])).reduce((x, y) => x + y, 0);
    await receiver.close();
    const ids = receiver.received.map((r) => JSON.parse(r.body).id);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
  });

  it('redelivers a finished row with the same event id', async () => {
    const receiver = await startReceiver();
    await event('evt_again0000001');
    const box = outbox(receiver.url);
    await box.runOnce();
    const row = await store.db.selectFrom('outbox').select('id').executeTakeFirstOrThrow();
    expect(await box.redeliver(row.id, 'ws_outbox000001')).toBe(true);
    expect(await box.redeliver(row.id, 'ws_other00000001')).toBe(false);
    await box.runOnce();
    await receiver.close();
    expect(receiver.received.map((r) => JSON.parse(r.body).id)).toEqual(['evt_again0000001', 'evt_again0000001']);
  });
});
