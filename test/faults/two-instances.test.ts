// bad-inputs F-11: two server processes on one PostgreSQL database. A `verified` event crosses instances
// (LISTEN/NOTIFY), each outbox row reaches the receiver once although both instances' workers
// claim (FOR UPDATE SKIP LOCKED), and the expiry sweep that runs every second on both instances
// expires each session once. Campaign workers on two instances: test/unit/messaging/campaigns/
// two-workers.test.ts (bad-inputs F-11, each recipient sent once, the number's rate held across both).
// Rate limits are PER INSTANCE (server/plugins/rate-limits.ts, docs/reliability.md): the last
// test shows it, so that a change to a shared store must update the documentation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../support/receiver.js';
import { freshDatabase, openStream, report, sendLogin, startServer, startSession, waitFor, type Server } from './support.js';
import { elapse } from '../support/eventually.js';

const TTL_SECONDS = 8;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let a: Server;
let b: Server;

beforeAll(async () => {
  database = await freshDatabase();
  receiver = await startReceiver();
  const env = { LOGIN_SESSION_TTL_SECONDS: String(TTL_SECONDS), RATE_LIMIT_PER_MINUTE: '40' };
  // Started together (the database is migrated already): start-up is most of this file's time.
  [a, b] = await Promise.all([startServer(database.url, { ...env, SEED: '1', WEBHOOK_URL: receiver.url }), startServer(database.url, env)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await receiver?.close();
  await database?.close();
});

const eventIds = () => receiver.received.map((r) => (JSON.parse(r.body) as { id: string }).id);

describe('F-11 two instances on one PostgreSQL', () => {
  it('F-11 verified crosses instances both ways; each outbox row delivered once with both workers running', async () => {
    const seed = a.info;
    const rounds = 20;
    let lost = 0;
    let duplicated = 0;
    for (let i = 0; i < rounds; i++) {
      // Even rounds: start and LOGIN on A, stream on B; odd rounds the other way round.
      const [entry, streamer] = i % 2 ? [b.info.url, a.info.url] : [a.info.url, b.info.url];
      const session = await startSession(seed, entry);
      const stream = await openStream(streamer, session);
      expect(await sendLogin(entry, seed, session.loginCode)).toBe(200);
      if (!(await stream.until('event: verified'))) lost++;
      await stream.until('never', 300); // a second copy would arrive right after the first
      duplicated += Math.max(0, stream.text.split('event: verified').length - 2);
      stream.close();
    }
    report('F-11 push', { sessions: rounds, lost, duplicated });
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });

    const rows = await database.db.selectFrom('outbox').select(['event_id', 'status']).execute();
    expect(rows).toHaveLength(rounds);
    await waitFor(() => new Set(eventIds()).size === rounds, 15_000, 'every webhook delivered');
    await elapse(1500, 'absence: room for a second delivery, if any');
    const ids = eventIds();
    const deliveriesLost = rows.filter((r) => !ids.includes(r.event_id)).length;
    const deliveriesDuplicated = ids.length - new Set(ids).size;
    report('F-11 outbox', { rows: rows.length, deliveries: ids.length, lost: deliveriesLost, duplicated: deliveriesDuplicated });
    expect({ deliveriesLost, deliveriesDuplicated }).toEqual({ deliveriesLost: 0, deliveriesDuplicated: 0 });
  }, 90_000);

  it('F-11 expiry sweeps on both instances expire each session once, one expired event on the stream', async () => {
    const seed = a.info;
    const sessions = [];
    for (let i = 0; i < 12; i++) sessions.push(await startSession(seed, i % 2 ? b.info.url : a.info.url));
    const streams = await Promise.all(sessions.slice(0, 4).map((s, i) => openStream(i % 2 ? a.info.url : b.info.url, s)));
    const ids = sessions.map((s) => s.sessionId);
    await waitFor(
      async () =>
        (await database.db.selectFrom('login_sessions').select('id').where('id', 'in', ids).where('status', '=', 'expired').execute()).length === ids.length,
      (TTL_SECONDS + 15) * 1000,
      'every session expired',
    );
    await Promise.all(streams.map((s) => s.until('never', 1500)));
    const events = await database.db
      .selectFrom('login_session_events')
      .select(['session_id', 'event'])
      .where('session_id', 'in', ids)
      .where('event', '=', 'expired')
      .execute();
    const perSession = new Map<string, number>();
    for (const e of events) perSession.set(e.session_id, (perSession.get(e.session_id) ?? 0) + 1);
    const lost = ids.filter((id) => !perSession.has(id)).length;
    const duplicated = [...perSession.values()].reduce((n, c) => n + c - 1, 0);
    const streamCopies = streams.map((s) => s.text.split('event: expired').length - 1);
    streams.forEach((s) => s.close());
    report('F-11 timers', { sessions: ids.length, lost, duplicated, streamCopies: streamCopies.join('/') });
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    expect(streamCopies).toEqual([1, 1, 1, 1]);
  }, 60_000);

  it('F-11 rate limits are per instance (documented): a key over its limit on A is still served by B', async () => {
    const call = (url: string) => fetch(`${url}/v1/auth/chatapp/status/ses_unknown`, { headers: { 'x-api-key': a.info.apiKey! } });
    let limited: Response | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const res = await call(a.info.url);
      if (res.status === 429) limited = res;
    }
    expect(limited?.status).toBe(429);
    expect(limited?.headers.get('retry-after')).toBeTruthy();
    expect((await call(b.info.url)).status).not.toBe(429);
  }, 30_000);
});
