// Nothing durable rides on a notification (docs/reliability.md, "Lost notifications"). Two server
// processes on one PostgreSQL database; PostgreSQL ends their LISTEN connections (or every
// connection, again and again) while LOGINs arrive. A LOGIN is verified in the transaction that
// stores it, so it is never lost; a stream on the other instance re-reads its session when that
// instance's LISTEN connection is back, so it gets `verified` although the NOTIFY was lost.
// Real time is unavoidable here: real processes, real connections ended by PostgreSQL.
import { execFile } from 'node:child_process';
import { createHmac, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundPayload } from '../../bench/lib/login-push.js';
import { elapse } from '../support/eventually.js';
import { APP_SECRET, freshDatabase, openStream, report, startServer, startSession, waitFor, type Server, type ServerInfo } from './support.js';

let database: Awaited<ReturnType<typeof freshDatabase>>;
let admin: pg.Client;
let a: Server;
let b: Server;

beforeAll(async () => {
  database = await freshDatabase();
  // Terminations go through a connection to another database, which they never end.
  admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  admin.on('error', () => {}); // ended by the restart case
  await admin.connect();
  [a, b] = await Promise.all([startServer(database.url, { SEED: '1' }), startServer(database.url)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await admin?.end();
  await database?.close();
});

const databaseName = () => new URL(database.url).pathname.slice(1);

/** Ends the backends of the test database: the LISTEN connections only, or every one. */
async function terminate(which: 'listeners' | 'all'): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity
      where datname = $1 and pid <> pg_backend_pid() ${which === 'listeners' ? "and query ilike 'listen%'" : ''}) t`,
    [databaseName()],
  );
  return rows[0]!.n;
}

/** The provider's delivery of one LOGIN: the same signed bytes again until it is answered 200. */
async function deliverLogin(url: string, seed: ServerInfo, code: string): Promise<number> {
  const body = inboundPayload(
    { displayPhoneNumber: seed.displayPhoneNumber!, providerPhoneNumberId: seed.providerPhoneNumberId! },
    `4915${randomInt(100_000_000, 999_999_999)}`,
    `LOGIN ${code}`,
  );
  const signature = `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}`;
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${url}/api/webhook/chatapp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      body,
    }).catch(() => undefined);
    if (res?.status === 200) return attempt;
    if (attempt >= 100) throw new Error(`the LOGIN delivery was refused 100 times (last ${res?.status})`);
    await elapse(100, 'the provider retries a refused delivery after a pause');
  }
}

const statusOf = async (url: string, sessionId: string) => {
  const res = await fetch(`${url}/v1/auth/chatapp/status/${sessionId}`, { headers: { 'x-api-key': a.info.apiKey! } });
  return res.status === 200 ? ((await res.json()) as { status: string }).status : `http ${res.status}`;
};

/** `count` sessions started alternately at A and B, each with a stream open on B. */
async function sessionsWithStreams(count: number) {
  const sessions: Awaited<ReturnType<typeof startSession>>[] = [];
  for (let i = 0; i < count; i++) sessions.push(await startSession(a.info, i % 2 ? b.info.url : a.info.url));
  return { sessions, streams: await Promise.all(sessions.map((s) => openStream(b.info.url, s))) };
}

/** The sessions' LOGINs, two at a time, alternately at A and B; answers the deliveries it took. */
async function deliverLogins(sessions: { loginCode: string }[], why: string): Promise<number> {
  let attempts = 0;
  const queue = sessions.map((s, i) => ({ s, url: i % 2 ? a.info.url : b.info.url }));
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const tries = await deliverLogin(next.url, a.info, next.s.loginCode);
        attempts += tries;
        await elapse(100, why);
      }
    }),
  );
  return attempts;
}

/**
 * What became of the sessions once the faults are over: those never verified (lost), `verified`
 * events stored twice for one session (duplicated), and streams that never saw `verified`.
 */
async function outcome(sessions: { sessionId: string }[], streams: Awaited<ReturnType<typeof openStream>>[], streamMs: number) {
  const ids = sessions.map((s) => s.sessionId);
  const verified = async () =>
    (await database.db.selectFrom('login_sessions').select('id').where('id', 'in', ids).where('status', '=', 'success').execute()).length;
  await waitFor(async () => (await verified()) === ids.length, 15_000, 'every session verified').catch(() => undefined);
  const streamed = await Promise.all(streams.map((s) => s.until('event: verified', streamMs)));
  streams.forEach((s) => s.close());
  const events = await database.db
    .selectFrom('login_session_events')
    .select('session_id')
    .where('session_id', 'in', ids)
    .where('event', '=', 'verified')
    .execute();
  return {
    lost: ids.length - (await verified()),
    duplicated: events.length - new Set(events.map((e) => e.session_id)).size,
    streamsLost: streamed.filter((ok) => !ok).length,
  };
}

describe('lost notifications on PostgreSQL', () => {
  it('LISTEN connections terminated and a LOGIN sent at once: verified on both instances, and on the stream, within 5 s', async () => {
    const rounds = 5;
    let lost = 0;
    let slowestMs = 0;
    for (let i = 0; i < rounds; i++) {
      const session = await startSession(a.info);
      const stream = await openStream(b.info.url, session);
      expect(await terminate('listeners')).toBe(2);
      const sent = Date.now();
      expect(await deliverLogin(a.info.url, a.info, session.loginCode)).toBe(1);
      const streamed = await stream.until('event: verified', 5_000);
      const onA = await statusOf(a.info.url, session.sessionId);
      const onB = await statusOf(b.info.url, session.sessionId);
      slowestMs = Math.max(slowestMs, Date.now() - sent);
      stream.close();
      if (!streamed || onA !== 'success' || onB !== 'success') lost++;
      expect({ streamed, onA, onB }).toEqual({ streamed: true, onA: 'success', onB: 'success' });
      expect(Date.now() - sent).toBeLessThan(5_000);
    }
    report('lost-notify listen', { logins: rounds, lost, duplicated: 0, slowestMs });
  }, 120_000);

  it('every backend terminated again and again under a stream of LOGINs: every session verified, on the stream too', async () => {
    const count = 50;
    const { sessions, streams } = await sessionsWithStreams(count);
    // PostgreSQL ends every connection of the database every 200 ms (as a restart or failover
    // would) while the LOGINs arrive, 2 at a time, alternately at A and B.
    let chaos = true;
    let terminations = 0;
    let backends = 0;
    const killer = (async () => {
      while (chaos) {
        backends += await terminate('all');
        terminations++;
        await elapse(200, 'faults at a real pace: connections ended every 200 ms');
      }
    })();
    const attempts = await deliverLogins(sessions, 'LOGINs spread over the faults, as users send them');
    chaos = false;
    await killer;
    const { lost, duplicated, streamsLost } = await outcome(sessions, streams, 10_000);
    report('lost-notify chaos', { logins: count, lost, duplicated, streamsLost, deliveries: attempts, terminations, backendsEnded: backends });
    expect(terminations).toBeGreaterThanOrEqual(10);
    expect({ lost, duplicated, streamsLost }).toEqual({ lost: 0, duplicated: 0, streamsLost: 0 });
  }, 180_000);

  // A real restart of the PostgreSQL server (every connection ended, the server away for a
  // moment), where the test may run one: PG_RESTART is the command (.ci/run sets it). Last in the
  // file, since it ends the admin connection too.
  it.runIf(process.env.PG_RESTART)(
    'PostgreSQL restarted under a stream of LOGINs: every session verified, on the stream too',
    async () => {
      const count = 30;
      const { sessions, streams } = await sessionsWithStreams(count);
      const startedAt = async () => (await sql<{ at: Date }>`select pg_postmaster_start_time() as at`.execute(database.db)).rows[0]!.at.getTime();
      const before = await startedAt();
      // Ten LOGINs before the restart, ten while it runs, ten once the server is back.
      const why = 'LOGINs spread over the restart, as users send them';
      let attempts = await deliverLogins(sessions.slice(0, 10), why);
      const restarted = promisify(execFile)('sh', ['-c', process.env.PG_RESTART!]);
      attempts += await deliverLogins(sessions.slice(10, 20), why);
      await restarted;
      expect(await startedAt()).toBeGreaterThan(before); // the server really restarted
      attempts += await deliverLogins(sessions.slice(20), why);
      const { lost, duplicated, streamsLost } = await outcome(sessions, streams, 15_000);
      report('lost-notify restart', { logins: count, lost, duplicated, streamsLost, deliveries: attempts });
      expect({ lost, duplicated, streamsLost }).toEqual({ lost: 0, duplicated: 0, streamsLost: 0 });
    },
    180_000,
  );
});
