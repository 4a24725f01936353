// Background workers on an idle embedded store (issue 27, item 4): with nothing due, no worker
// queries (each sleeps its idle re-check, WORKER_IDLE_MS, 60 s by default), and a write that
// creates due work is picked up at its due time without a poll: an outbox row, a Login session
// that expires, a scheduled campaign, a sequence step.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { elapse, eventually } from '#test/support/eventually.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { startReceiver } from '#test/support/receiver.js';
import { outbound, templateId } from '#test/unit/messaging/automation/support.js';
import { addContacts, call, workspace } from '#test/unit/messaging/campaigns/support.js';
import { announceDue } from '#server/apis/messaging/automation/due.js';
import { enrol } from '#server/apis/messaging/automation/sequences.js';
import { newId } from '#server/lib/ids.js';
import { DEFAULT_IDLE_MS, WakeUp } from '#server/lib/wake-up.js';
import { enqueue } from '#server/outbox/outbox.js';
import { PGliteStatements } from '#server/store/pglite-statements.js';

/** The store's own upkeep, not a worker's: PGlite's VACUUM/ANALYZE pass and the clock's offset. */
const UPKEEP = /pg_stat_user_tables|^\s*(vacuum|analyze)\b|clock_timestamp\(\)/i;

const queries: { sql: string; at: number }[] = [];
/** The last sleep each WakeUp (outbox, campaigns, automation timers, provider inbox, the two session sweeps) began. */
const sleeps = new Map<WakeUp, number>();
let app: FastifyInstance;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  const query = PGliteStatements.prototype.query;
  vi.spyOn(PGliteStatements.prototype, 'query').mockImplementation(function (this: PGliteStatements, sql, params) {
    queries.push({ sql, at: performance.now() });
    return query.call(this, sql, params) as never;
  });
  const sleep = WakeUp.prototype.sleep;
  vi.spyOn(WakeUp.prototype, 'sleep').mockImplementation(function (this: WakeUp, ms) {
    sleeps.set(this, ms);
    return sleep.call(this, ms);
  });
  receiver = await startReceiver();
  // Sessions of one second: the expiry sweep must wake for one well before its idle re-check.
  app = await buildShared({ env: { LOGIN_SESSION_TTL_SECONDS: '1', RATE_LIMIT_IP_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  vi.restoreAllMocks();
  await receiver.close();
});

const workerQueries = (since: number) => queries.filter((q) => q.at >= since && !UPKEEP.test(q.sql)).map((q) => q.sql.replace(/\s+/g, ' ').slice(0, 120));

describe('idle workers', () => {
  it('run no query while nothing is due: each sleeps its idle re-check', async () => {
    // The start-up cycles (each worker reads its tables once) are over once the store is quiet.
    await eventually(() => queries.length > 0 && performance.now() - queries.at(-1)!.at > 300, { what: 'the start-up cycles to end' });
    const since = performance.now();
    // Before, the outbox, campaigns and automation timers read every second and the inbox and the
    // inbound dispatcher every two: a window of 2.5 s saw dozens of queries.
    await elapse(2_500, 'no worker may query while nothing is due');
    expect(workerQueries(since)).toEqual([]);
    // Outbox, campaigns, automation timers, provider inbox, Login expiry, Connect reader sessions.
    const idle = [...sleeps.values()].filter((ms) => ms >= DEFAULT_IDLE_MS - 1_000);
    expect(idle.length).toBeGreaterThanOrEqual(6);
  });
});

describe('due work is picked up without a poll', () => {
  it('an outbox row enqueued is delivered at once (the idle worker is woken by outbox_due)', async () => {
    app.platform.outbox.register('idle_probe', async () => ({ url: receiver.url, headers: () => ({}) }));
    const workspaceId = (await insertLoginApp(app)).workspaceId;
    const payload = JSON.stringify({ probe: newId('evt') });
    await enqueue(app.platform.store.db, { workspaceId, endpointKind: 'idle_probe', endpointId: 'probe', eventId: newId('evt'), eventType: 'probe', payload });
    await eventually(() => receiver.received.some((r) => r.body === payload), { within: 5_000, what: 'the delivery' });
  });

  it('a Login session expires at its time, swept without a status call', async () => {
    const f = await insertLoginApp(app);
    const res = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': f.apiKey }, payload: {} });
    expect(res.statusCode).toBe(201);
    const { sessionId } = res.json() as { sessionId: string };
    const status = () => app.platform.store.db.selectFrom('login_sessions').select('status').where('id', '=', sessionId).executeTakeFirstOrThrow();
    expect((await status()).status).toBe('pending');
    await eventually(async () => (await status()).status === 'expired', { within: 5_000, what: 'the expiry sweep' });
  });

  it('a scheduled campaign starts at scheduled_at (the idle worker learned its time from campaigns_due)', async () => {
    const w = await workspace(app);
    await addContacts(app.platform.store.db, w.workspaceId, 1);
    const at = new Date(Date.now() + 1_000).toISOString();
    const res = await call(app, w.key)('POST', '/api/campaigns', {
      name: 'Idle',
      chatapp_phone_number: w.phone,
      audience: { type: 'all_contacts' },
      template: { name: 'welcome_offer', language: 'en_US' },
      scheduled_at: at,
    });
    expect(res.statusCode).toBe(201);
    const started = await eventually(
      () =>
        app.platform.store.db
          .selectFrom('campaigns')
          .select('started_at')
          .where('id', '=', res.json().id)
          .where('started_at', 'is not', null)
          .executeTakeFirst(),
      { within: 5_000, what: 'the campaign to start' },
    );
    expect(started.started_at!.getTime()).toBeGreaterThanOrEqual(Date.parse(at));
  });

  it('a sequence step fires at its time: the idle timer worker is told by automation_due', async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const tpl = await templateId(app, w.workspaceId, 'welcome_offer');
    const now = app.platform.now();
    // A keyword sequence: the worker does not watch contacts or tags for it (no 1 s look).
    const seq = await db
      .insertInto('automation_sequences')
      .values({
        id: newId('seq'),
        workspace_id: w.workspaceId,
        business_account_id: w.accountId,
        phone_number_id: w.numberId,
        name: 'Idle drip',
        status: 'active',
        trigger: JSON.stringify({ type: 'keyword', tag_id: null, keyword: 'IDLE' }),
        steps: JSON.stringify([{ position: 1, delay: 1, delay_unit: 'minutes', message_type: 'template', text: null, template_id: tpl, language: 'en_US' }]),
        stop_on_reply: false,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const contactId = newId('ct');
    const phone = '+4915112349999';
    await db.insertInto('contacts').values({ id: contactId, workspace_id: w.workspaceId, phone, name: 'Ida' }).execute();
    expect(await enrol(app.platform, seq, contactId, w.numberId)).toBe(true);
    // The step is a minute away; make it half a second away, and announce it as enrol() did.
    const fireAt = new Date(Date.now() + 500);
    await db.updateTable('automation_sequence_enrolments').set({ fire_at: fireAt }).where('contact_id', '=', contactId).execute();
    await announceDue(app.platform, fireAt);
    await eventually(async () => (await outbound(app, phone)).length === 1, { within: 5_000, what: 'the step' });
  });
});
