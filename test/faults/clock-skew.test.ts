// bad-inputs F-12: two instances whose system clocks are 3 minutes apart (B's is 3 minutes fast, through a
// preload that moves its Date.now). Both go by the database's clock (server/store/db-clock.ts):
// a session started on A with a 2-minute lifetime is still pending when B reads it at once (B's
// own clock would call it expired a minute ago), its expiry as B answers it is A's, and B's
// expiry sweep leaves it alone. The sender side of bad-inputs F-12 (webhook signatures ±4 and ±6 minutes
// from the receiver) is tested with the client helpers, test/unit/clients/webhooks.test.ts.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabase, report, startServer, type Server } from './support.js';
import { elapse } from '../support/eventually.js';

const SKEW_MS = 3 * 60_000;
const TTL_SECONDS = 120;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let a: Server;
let b: Server;

beforeAll(async () => {
  database = await freshDatabase();
  const env = { LOGIN_SESSION_TTL_SECONDS: String(TTL_SECONDS) };
  const preload = fileURLToPath(new URL('./skew-clock.cjs', import.meta.url));
  [a, b] = await Promise.all([
    startServer(database.url, { ...env, SEED: '1' }),
    startServer(database.url, { ...env, CLOCK_SKEW_MS: String(SKEW_MS), NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim() }),
  ]);
}, 300_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await database?.close();
});

it('F-12 instances 3 minutes apart: a 2-minute session started on one is pending on the other, with the same expiry; no sweep expires it', async () => {
  const key = { 'x-api-key': a.info.apiKey! };
  const started = await fetch(`${a.info.url}/v1/auth/chatapp/start`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: '{}' });
  expect(started.status).toBe(201);
  const session = (await started.json()) as { sessionId: string; expiresAt: string };
  const expiresIn = Date.parse(session.expiresAt) - Date.now();
  expect(Math.abs(expiresIn - TTL_SECONDS * 1000)).toBeLessThan(10_000);
  const onB = await fetch(`${b.info.url}/v1/auth/chatapp/status/${session.sessionId}`, { headers: key });
  const body = (await onB.json()) as { status: string; expiresAt?: string };
  await elapse(3_000, "absence: B's expiry sweep (a real process) gets a few rounds to expire the session wrongly");
  const row = await database.db.selectFrom('login_sessions').select('status').where('id', '=', session.sessionId).executeTakeFirstOrThrow();
  report('F-12', {
    lost: row.status === 'pending' ? 0 : 1,
    duplicated: 0,
    skewMs: SKEW_MS,
    ttlSeconds: TTL_SECONDS,
    statusOnB: onB.status,
    stateOnB: body.status,
    stateAfterSweeps: row.status,
    expiresInMs: Math.round(expiresIn),
  });
  expect(onB.status, JSON.stringify(body)).toBe(200);
  expect(body.status).toBe('pending');
  expect(body.expiresAt).toBe(session.expiresAt);
  expect(row.status).toBe('pending');
}, 120_000);
