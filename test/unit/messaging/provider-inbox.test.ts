// The provider webhook's durable inbox (server/apis/messaging/provider/inbox.ts): a burst is
// acknowledged once stored and every delivery is then processed exactly once; a delivery stored
// but not processed (a crash) is processed by the next app on the same store at start; two
// workers on one store share the backlog without running a delivery twice; a delivery that keeps
// failing is kept with its error. Runs on PGlite (unit) and PostgreSQL (pg).
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { build, buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { sha256Header } from '#server/lib/signatures.js';
import { metaStatusDelivery, metaTextDelivery } from '#test/fakes/meta-webhook-examples.js';
import { LANE_STATUSES, laneOf, ProviderInbox } from '#server/apis/messaging/provider/inbox.js';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { eventually } from '#test/support/eventually.js';
import { tenant, type Tenant } from './inbox/support.js';

const URL = '/api/webhook/chatapp';
/**
 * How long a backlog may take to drain before a case gives up: a hang detector, not a speed. A
 * burst of 300 takes about a second alone; on a busy 2-core machine under the full suite the inbox
 * drained 120 deliveries in 40 s, and the former 10-30 s bounds failed cases that were progressing.
 */
const DRAIN_MS = 90_000;

function post(app: FastifyInstance, body: unknown) {
  const raw = JSON.stringify(body);
  return app.inject({
    method: 'POST',
    url: URL,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, raw) },
    payload: raw,
  });
}

function target(t: Tenant) {
  return { providerPnId: t.providerPnId, number: t.number };
}

/** Inbound messages stored per wamid (a delivery processed twice would show as 2). */
async function storedWamids(app: FastifyInstance, workspaceId: string): Promise<Map<string, number>> {
  const rows = await app.platform.store.db
    .selectFrom('messages')
    .select('provider_message_id')
    .where('workspace_id', '=', workspaceId)
    .where('direction', '=', 'inbound')
    .execute();
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.provider_message_id!, (counts.get(r.provider_message_id!) ?? 0) + 1);
  return counts;
}

async function pendingRows(app: FastifyInstance, ids?: string[]) {
  let q = app.platform.store.db.selectFrom('provider_deliveries').selectAll();
  if (ids) q = q.where('id', 'in', ids);
  return q.execute();
}

/** A delivery as the inbox stores it, written directly (an instance that stored it and died). */
async function storeDirectly(app: FastifyInstance, payload: unknown, lease?: { by: string; until: Date }, lane?: number) {
  const id = newId('pdl');
  await app.platform.store.db
    .insertInto('provider_deliveries')
    .values({
      id,
      payload: JSON.stringify(payload),
      received_at: new Date(),
      ...(lane !== undefined ? { lane } : {}),
      ...(lease ? { leased_by: lease.by, lease_until: lease.until, attempts: 1 } : {}),
    })
    .execute();
  return id;
}

describe('one app', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared();
  });

  it('a burst of 300 signed deliveries: every one answered 200 once stored, every message then stored exactly once, the inbox emptied', async () => {
    const t = await tenant(app);
    const inbox = app.providerInbox;
    const storedBefore = inbox.stats.stored;
    const wamids = Array.from({ length: 300 }, (_, i) => `wamid.inbox.${t.workspaceId}.${i}`);
    const answers = await Promise.all(wamids.map((w, i) => post(app, metaTextDelivery(target(t), w, Date.now(), `4915112${String(i).padStart(6, '0')}`))));
    expect(answers.map((a) => a.statusCode)).toEqual(wamids.map(() => 200));
    expect(answers[0]!.json()).toEqual({ received: true });
    // The burst went through the inbox (not every delivery processed before its answer).
    expect(inbox.stats.stored - storedBefore).toBeGreaterThan(0);
    const counts = await eventually(
      async () => {
        const c = await storedWamids(app, t.workspaceId);
        return c.size === wamids.length && c;
      },
      { within: DRAIN_MS, what: 'all 300 messages', app },
    );
    expect([...counts.keys()].sort()).toEqual([...wamids].sort());
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    await eventually(async () => (await pendingRows(app)).filter((r) => r.failed_at === null).length === 0, { within: DRAIN_MS, what: 'the inbox drained' });
  });

  it('a delivery alone is processed before its answer, as before the inbox (nothing left in it)', async () => {
    const t = await tenant(app);
    await eventually(async () => (await pendingRows(app)).filter((r) => r.failed_at === null).length === 0, { within: DRAIN_MS, what: 'an empty inbox' });
    const wamid = `wamid.inline.${t.workspaceId}`;
    const res = await post(app, metaTextDelivery(target(t), wamid));
    expect(res.statusCode, res.body).toBe(200);
    expect((await storedWamids(app, t.workspaceId)).get(wamid)).toBe(1);
    expect(await pendingRows(app)).toEqual([]);
  });

  it('a signed delivery that fails validation is refused with problem+json and not stored', async () => {
    const t = await tenant(app);
    const before = (await pendingRows(app)).length;
    const body = metaTextDelivery(target(t), `wamid.invalid.${t.workspaceId}`) as { entry: unknown };
    body.entry = 'not a list';
    const res = await post(app, body);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await pendingRows(app)).length).toBe(before);
    expect((await storedWamids(app, t.workspaceId)).size).toBe(0);
  });
});

describe('recovery and sharing on one store', () => {
  // Apps on one store share its at-rest key.
  const shared = { env: { SECRET_KEY: 'provider-inbox-tests-share-this-secret-key-0123' } };

  it('deliveries stored but never processed (the instance died) are processed by a new app on the same store at start', async () => {
    const store = await openTestStore();
    try {
      const first = await build({ ...shared, overrides: { store } });
      const t = await tenant(first);
      await first.close(); // no worker runs on this store now
      const waiting = `wamid.crash.${t.workspaceId}.never-claimed`;
      const leased = `wamid.crash.${t.workspaceId}.lease-expired`;
      const ids = [
        await storeDirectly(first, metaTextDelivery(target(t), waiting)),
        await storeDirectly(first, metaTextDelivery(target(t), leased), { by: 'an-instance-that-died', until: new Date(Date.now() - 1000) }),
      ];
      expect((await storedWamids(first, t.workspaceId)).size).toBe(0);
      const second = await build({ ...shared, overrides: { store } });
      const counts = await eventually(
        async () => {
          const c = await storedWamids(second, t.workspaceId);
          return c.size === 2 && c;
        },
        { within: DRAIN_MS, what: 'both deliveries processed', app: second },
      );
      expect(Object.fromEntries(counts)).toEqual({ [waiting]: 1, [leased]: 1 });
      expect(await pendingRows(second, ids)).toEqual([]);
      await second.close();
    } finally {
      await store.close();
    }
  });

  it('two workers on one store: each stored delivery is processed once, the work shared', async () => {
    const store = await openTestStore();
    try {
      const seed = await build({ ...shared, overrides: { store } });
      const t = await tenant(seed);
      await seed.close();
      const wamids = Array.from({ length: 120 }, (_, i) => `wamid.pair.${t.workspaceId}.${i}`);
      for (const [i, w] of wamids.entries()) await storeDirectly(seed, metaTextDelivery(target(t), w, Date.now(), `4915113${String(i).padStart(6, '0')}`));
      // Both start together and sweep the same backlog.
      const [a, b] = await Promise.all([build({ ...shared, overrides: { store } }), build({ ...shared, overrides: { store } })]);
      const counts = await eventually(
        async () => {
          const c = await storedWamids(a, t.workspaceId);
          return c.size === wamids.length && c;
        },
        { within: DRAIN_MS, what: 'all 120 processed' },
      );
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      await eventually(async () => (await pendingRows(a)).length === 0, { within: DRAIN_MS, what: 'the inbox drained' });
      const [sa, sb] = [a.providerInbox.stats, b.providerInbox.stats];
      // Every row's effects committed once: no worker found a row gone (claims never overlapped), none failed.
      expect(sa.processed + sb.processed).toBe(wamids.length);
      expect(sa.skipped + sb.skipped).toBe(0);
      expect(sa.failed + sb.failed).toBe(0);
      if (onPostgres) {
        // Two connections, FOR UPDATE SKIP LOCKED: both workers took part.
        expect(sa.processed).toBeGreaterThan(0);
        expect(sb.processed).toBeGreaterThan(0);
      }
      await Promise.all([a.close(), b.close()]);
    } finally {
      await store.close();
    }
  });

  it('a poison delivery is tried up to the limit, then kept with its error and never claimed again', async () => {
    const store = await openTestStore();
    try {
      const app = await build({ env: { ...shared.env, PROVIDER_INBOX_POLL_MS: '50', PROVIDER_INBOX_RETRY_MS: '5' }, overrides: { store } });
      const t = await tenant(app);
      // Valid JSON, but not a delivery processProviderPayload can apply (no `entry`): it throws each time.
      const poison = await storeDirectly(app, { object: 'whatsapp_business_account' });
      const good = `wamid.after-poison.${t.workspaceId}`;
      await storeDirectly(app, metaTextDelivery(target(t), good));
      const [row] = await eventually(
        async () => {
          const rows = await pendingRows(app, [poison]);
          return rows[0]?.failed_at && rows;
        },
        { within: DRAIN_MS, what: 'the poison delivery given up' },
      );
      expect(row!.attempts).toBe(8);
      expect(row!.last_error).toMatch(/entry|undefined|flatMap/);
      expect(row!.lease_until).toBeNull();
      expect(row!.leased_by).toBeNull();
      // The good delivery behind it was not held up, and the poison row is not tried again.
      expect((await storedWamids(app, t.workspaceId)).get(good)).toBe(1);
      const failed = app.providerInbox.stats.failed;
      expect(failed).toBe(8);
      const more = `wamid.later.${t.workspaceId}`;
      await storeDirectly(app, metaTextDelivery(target(t), more));
      app.providerInbox.signal();
      await eventually(async () => (await storedWamids(app, t.workspaceId)).get(more) === 1, { within: DRAIN_MS, what: 'a later delivery processed' });
      expect(app.providerInbox.stats.failed).toBe(8);
      expect((await pendingRows(app, [poison]))[0]!.attempts).toBe(8);
      await app.close();
    } finally {
      await store.close();
    }
  });

  it('the connection ends during an attempt and again while its failure is recorded: the delivery is taken again at once, not after its lease', async () => {
    const store = await openTestStore();
    try {
      const app = await build({ ...shared, overrides: { store } });
      const t = await tenant(app);
      await app.providerInbox.stop(); // only the inbox below works on this store
      const db = app.platform.store.db;
      // The faults, once each (a sequence is not rolled back with the transaction that fails):
      // the delivery's transaction ends when it stores the message, then the statement that
      // records the failed attempt ends too. On PostgreSQL the backend really is terminated there
      // (as the chaos fault test does to every backend); PGlite has one connection, so it errs.
      const fault = onPostgres ? 'perform pg_terminate_backend(pg_backend_pid()); ' : '';
      const once = (name: string, when: string) =>
        `create function fault_${name}() returns trigger language plpgsql as $$ begin
          if ${when}nextval('fault_once_${name}') = 1 then ${fault}raise exception 'the connection ended in the ${name}'; end if;
          return new; end $$`;
      for (const statement of [
        'create sequence fault_once_attempt',
        'create sequence fault_once_record',
        once('attempt', ''),
        once('record', 'new.last_error is not null and '),
        'create trigger fault_attempt before insert on messages for each row execute function fault_attempt()',
        'create trigger fault_record before update on provider_deliveries for each row execute function fault_record()',
      ])
        await sql.raw(statement).execute(db);
      // An hour's lease: before the fix the row waited for it, so this case would hang.
      const inbox = new ProviderInbox({ platform: app.platform, log: app.log, leaseMs: 3_600_000 });
      const first = `wamid.orphan.${t.workspaceId}.attempt`;
      const firstRow = await storeDirectly(app, metaTextDelivery(target(t), first));
      await inbox.start();
      try {
        await eventually(async () => (await storedWamids(app, t.workspaceId)).get(first) === 1, { within: DRAIN_MS, what: 'the delivery taken again' });
        expect(await pendingRows(app, [firstRow])).toEqual([]);
        // Both faults happened: one failed attempt, whose record was lost, then the one that committed.
        expect(inbox.stats).toMatchObject({ processed: 1, failed: 1 });
        const calls = await sql<{ attempt: number; record: number }>`select
          (select last_value::int from fault_once_attempt) as attempt, (select last_value::int from fault_once_record) as record`.execute(db);
        expect(calls.rows[0]).toEqual({ attempt: 2, record: 1 });
        // A claim whose answer never came back (committed, then the connection ended): its rows
        // are this worker's, leased for an hour, and nobody works on them. The next claim takes them.
        const second = `wamid.orphan.${t.workspaceId}.claim`;
        const secondRow = await storeDirectly(app, metaTextDelivery(target(t), second), { by: inbox.workerId, until: new Date(Date.now() + 3_600_000) });
        inbox.signal();
        await eventually(async () => (await storedWamids(app, t.workspaceId)).get(second) === 1, { within: DRAIN_MS, what: 'the orphaned claim taken again' });
        expect(await pendingRows(app, [secondRow])).toEqual([]);
        expect(inbox.stats).toMatchObject({ processed: 2, failed: 1 });
      } finally {
        await inbox.stop();
      }
      await app.close();
    } finally {
      await store.close();
    }
  });

  it.runIf(onPostgres)(
    'every attempt ended by a terminated backend: not counted, each tried again after the first delay, the delivery applied once',
    async () => {
      const store = await openTestStore();
      try {
        const app = await build({ ...shared, overrides: { store } });
        const t = await tenant(app);
        await app.providerInbox.stop();
        const db = app.platform.store.db;
        // The first three attempts end with their backend, when they store the message.
        for (const statement of [
          'create sequence fault_count',
          `create function fault_terminate() returns trigger language plpgsql as $$ begin
          if nextval('fault_count') <= 3 then perform pg_terminate_backend(pg_backend_pid()); raise exception 'ended'; end if;
          return new; end $$`,
          'create trigger fault_terminate before insert on messages for each row execute function fault_terminate()',
        ])
          await sql.raw(statement).execute(db);
        // A counted failure waits an hour (this case would hang); the first delay is none.
        const inbox = new ProviderInbox({ platform: app.platform, log: app.log, retryDelayMs: (attempt) => (attempt === 1 ? 0 : 3_600_000) });
        const wamid = `wamid.outage.${t.workspaceId}`;
        const id = await storeDirectly(app, metaTextDelivery(target(t), wamid));
        await inbox.start();
        try {
          await eventually(async () => (await storedWamids(app, t.workspaceId)).get(wamid) === 1, {
            within: DRAIN_MS,
            what: 'the delivery applied after the outage',
          });
          expect(await pendingRows(app, [id])).toEqual([]);
          expect(inbox.stats).toMatchObject({ processed: 1, failed: 3 });
        } finally {
          await inbox.stop();
        }
        await app.close();
      } finally {
        await store.close();
      }
    },
  );

  it('a message stored behind a backlog of statuses is applied first, the statuses after it in batches, each once', async () => {
    const store = await openTestStore();
    try {
      const app = await build({ ...shared, overrides: { store } });
      const t = await tenant(app);
      await app.providerInbox.stop(); // this app's own worker takes no part
      const db = app.platform.store.db;
      const contactId = newId('ct');
      await db.insertInto('contacts').values({ id: contactId, workspace_id: t.workspaceId, phone: '+4915110000001' }).execute();
      const wamids = Array.from({ length: 10 }, (_, i) => `wamid.lane.${t.workspaceId}.${i}`);
      for (const wamid of wamids)
        await db
          .insertInto('messages')
          .values({
            id: newId('msg'),
            workspace_id: t.workspaceId,
            phone_number_id: t.pnId,
            contact_id: contactId,
            direction: 'outbound',
            type: 'text',
            content: JSON.stringify({ text: 'Our offer' }),
            provider_message_id: wamid,
            status: 'accepted',
            created_at: new Date(),
            status_at: new Date(),
          })
          .execute();
      const statuses = wamids.map((w) => metaStatusDelivery(target(t), w, 'delivered'));
      expect(statuses.map(laneOf)).toEqual(wamids.map(() => LANE_STATUSES));
      for (const delivery of statuses) await storeDirectly(app, delivery, undefined, laneOf(delivery));
      const inbound = `wamid.lane.${t.workspaceId}.inbound`;
      await storeDirectly(app, metaTextDelivery(target(t), inbound), undefined, laneOf(metaTextDelivery(target(t), inbound)));
      const order: string[] = [];
      const off = [
        app.platform.bus.subscribe('message.received', () => void order.push('received')),
        app.platform.bus.subscribe('message.status', () => void order.push('status')),
      ];
      // Claims of three: the first holds the message (claimed first though stored last) and two statuses.
      const inbox = new ProviderInbox({ platform: app.platform, log: app.log, claimSize: 3 });
      await inbox.start();
      try {
        await eventually(async () => (await pendingRows(app)).length === 0 && order.length === 11, { within: 20_000, what: 'the inbox drained', app });
      } finally {
        await inbox.stop();
        for (const unsubscribe of off) unsubscribe();
      }
      expect(order).toEqual(['received', ...wamids.map(() => 'status')]);
      expect(inbox.stats).toMatchObject({ processed: 11, skipped: 0, failed: 0 });
      const rows = await db.selectFrom('messages').select('status').where('provider_message_id', 'in', wamids).execute();
      expect(rows.map((r) => r.status)).toEqual(wamids.map(() => 'delivered'));
      expect((await storedWamids(app, t.workspaceId)).get(inbound)).toBe(1);
      await app.close();
    } finally {
      await store.close();
    }
  });

  it('a batch of statuses leaves messages, chats and campaign recipients as the same statuses applied one by one', async () => {
    const store = await openTestStore();
    try {
      const app = await build({ ...shared, overrides: { store } });
      const t = await tenant(app);
      await app.providerInbox.stop(); // deliveries posted are applied inline; stored ones only by the inbox below
      const db = app.platform.store.db;
      const campaignId = newId('cmp');
      await db
        .insertInto('campaigns')
        .values({
          id: campaignId,
          workspace_id: t.workspaceId,
          name: 'Offer',
          status: 'sending',
          phone_number_id: t.pnId,
          chatapp_phone_number: t.number,
          waba_id: t.wabaId,
          audience: JSON.stringify({ all: true }),
          template: JSON.stringify({ name: 'offer', language: 'en_US' }),
          rate_per_second: 10,
          created_at: new Date(),
          updated_at: new Date(),
        })
        .execute();
      const at = Date.now() - 60_000;
      // For each of two sets of messages (batched, one by one): sent-delivered-read, delivered
      // before sent (implied times), read of a message without a chat, a failure with its error,
      // read then delivered (stays read), and a status for an unknown wamid.
      const plan = async (set: string) => {
        const wamid = (k: number) => `wamid.eq.${set}.${t.workspaceId}.${k}`;
        for (const k of [0, 1, 2, 3, 4]) {
          const contactId = newId('ct');
          await db
            .insertInto('contacts')
            .values({ id: contactId, workspace_id: t.workspaceId, phone: `+49151200${set === 'a' ? 1 : 2}000${k}` })
            .execute();
          const messageId = newId('msg');
          await db
            .insertInto('messages')
            .values({
              id: messageId,
              workspace_id: t.workspaceId,
              phone_number_id: t.pnId,
              contact_id: contactId,
              direction: 'outbound',
              type: 'text',
              content: JSON.stringify({ text: 'Our offer' }),
              provider_message_id: wamid(k),
              status: 'accepted',
              created_at: new Date(at),
              status_at: new Date(at),
            })
            .execute();
          await db
            .insertInto('campaign_recipients')
            .values({
              campaign_id: campaignId,
              contact_id: contactId,
              phone: `+49151200${set === 'a' ? 1 : 2}000${k}`,
              state: 'sent',
              message_id: messageId,
            } as never)
            .execute();
          if (k !== 2) {
            const chatId = newId('chat');
            await db
              .insertInto('chats')
              .values({ id: chatId, workspace_id: t.workspaceId, phone_number_id: t.pnId, contact_id: contactId, last_message_at: new Date(at) } as never)
              .execute();
            await db.updateTable('messages').set({ chat_id: chatId }).where('id', '=', messageId).execute();
          }
        }
        const failed = metaStatusDelivery(target(t), wamid(3), 'sent', at + 4000) as any;
        Object.assign(failed.entry[0].changes[0].value.statuses[0], {
          status: 'failed',
          errors: [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'Not on WhatsApp' } }],
        });
        return [
          metaStatusDelivery(target(t), wamid(0), 'sent', at + 1000),
          metaStatusDelivery(target(t), wamid(0), 'delivered', at + 2000),
          metaStatusDelivery(target(t), wamid(1), 'delivered', at + 2000),
          metaStatusDelivery(target(t), wamid(0), 'read', at + 3000),
          metaStatusDelivery(target(t), wamid(2), 'read', at + 3000),
          failed,
          metaStatusDelivery(target(t), wamid(4), 'read', at + 3000),
          metaStatusDelivery(target(t), wamid(4), 'delivered', at + 2000),
          metaStatusDelivery(target(t), `wamid.eq.${set}.unknown`, 'delivered', at + 2000),
        ];
      };
      const seen: { id: string; status: string; previous: string }[] = [];
      const offSeen = app.platform.bus.subscribe(
        'message.status',
        (e) => void seen.push({ id: String(e.data.messageId), status: String(e.data.status), previous: String(e.data.previousStatus) }),
      );
      const batched = await plan('a');
      for (const delivery of batched) await storeDirectly(app, delivery, undefined, laneOf(delivery));
      const inbox = new ProviderInbox({ platform: app.platform, log: app.log, claimSize: 20 });
      await inbox.start();
      try {
        await eventually(async () => (await pendingRows(app)).length === 0, { within: 20_000, what: 'the batch applied', app });
      } finally {
        await inbox.stop();
      }
      for (const delivery of await plan('b')) expect((await post(app, delivery)).statusCode).toBe(200);
      await eventually(() => seen.length === 14, { within: 10_000, what: 'seven status events of each set', app });
      offSeen();
      expect(inbox.stats).toMatchObject({ processed: batched.length, failed: 0 });
      const outcome = async (set: string) => {
        const rows = await db
          .selectFrom('messages as m')
          .leftJoin('campaign_recipients as r', 'r.message_id', 'm.id')
          .select([
            'm.provider_message_id',
            'm.status',
            'm.status_at',
            'm.sent_at',
            'm.delivered_at',
            'm.read_at',
            'm.failed_at',
            'm.error',
            'm.billing',
            'm.chat_id',
            'r.state',
          ])
          .where('m.provider_message_id', 'like', `wamid.eq.${set}.%`)
          .orderBy('m.provider_message_id')
          .execute();
        const messageIds = await db
          .selectFrom('messages')
          .select('id')
          .where('provider_message_id', 'like', `wamid.eq.${set}.%`)
          .orderBy('provider_message_id')
          .execute();
        return {
          rows: rows.map((r) => ({ ...r, provider_message_id: r.provider_message_id!.replace(`.${set}.`, '.'), chat_id: r.chat_id !== null })),
          events: seen
            .filter((e) => messageIds.some((m) => m.id === e.id))
            .map((e) => `${messageIds.findIndex((m) => m.id === e.id)} ${e.previous}->${e.status}`)
            .sort(),
        };
      };
      const [a, b] = [await outcome('a'), await outcome('b')];
      expect(a).toEqual(b);
      expect(a.rows.map((r) => [r.status, r.state])).toEqual([
        ['read', 'read'],
        ['delivered', 'delivered'],
        ['read', 'read'],
        ['failed', 'failed'],
        ['read', 'read'],
      ]);
      expect(a.rows.every((r) => r.chat_id)).toBe(true);
      await app.close();
    } finally {
      await store.close();
    }
  }, 60_000);
});
