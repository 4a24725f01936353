// bad-inputs F-4, F-5: PostgreSQL out of reach. A TCP proxy sits between instance A and PostgreSQL and is
// cut (every connection closed, new ones closed at once) while requests arrive: each answers
// 503 `unavailable` with Retry-After in bounded time, never 500, and nothing hangs. Restored,
// A recovers by itself: its pool serves requests again, its LISTEN connection is re-established
// (a `verified` caused on instance B, which never lost the database, reaches a stream on A), and
// its outbox worker delivers again. At start, an unreachable database makes the server exit
// non-zero with a message (bad-inputs F-5). A PostgreSQL restart ends every connection exactly like the cut.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startChild } from '../../bench/lib/child.js';
import { startReceiver } from '../support/receiver.js';
import { startProxy } from './proxy.js';
import { SECRET_KEY, freshDatabase, openStream, report, sendLogin, startServer, startSession, waitFor, type Server } from './support.js';

let database: Awaited<ReturnType<typeof freshDatabase>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let a: Server;
let b: Server;

beforeAll(async () => {
  database = await freshDatabase();
  const target = new URL(database.url);
  proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5432) });
  receiver = await startReceiver();
  [a, b] = await Promise.all([startServer(proxy.via(database.url), { SEED: '1', WEBHOOK_URL: receiver.url }), startServer(database.url)]);
});
afterAll(async () => {
  proxy?.restore();
  await Promise.all([a?.stop(), b?.stop()]);
  await proxy?.close();
  await receiver?.close();
  await database?.close();
});

it('F-4 database cut at runtime: 503 unavailable with Retry-After, no 500, nothing hangs; then recovery', async () => {
  const seed = a.info;
  const headers = { 'x-api-key': seed.apiKey!, 'content-type': 'application/json' };
  expect((await fetch(`${seed.url}/readyz`)).status).toBe(200);
  // A real session's status: the key is looked up and the session read, both in the database.
  const status = `${seed.url}/v1/auth/chatapp/status/${(await startSession(seed)).sessionId}`;
  expect((await fetch(status, { headers })).status).toBe(200);

  proxy.cut();
  const calls = [
    () => fetch(`${seed.url}/readyz`),
    () => fetch(status, { headers }),
    () => fetch(`${seed.url}/v1/auth/chatapp/start`, { method: 'POST', headers, body: '{}' }),
    () => fetch(`${seed.url}/api/login/apps`, { headers: { authorization: seed.owner! } }),
  ];
  const started = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 12 }, async (_, i) => {
      const res = await calls[i % calls.length]().catch(() => undefined);
      return { status: res?.status, type: res ? ((await res.json()) as { type?: string }).type : undefined, retryAfter: res?.headers.get('retry-after') };
    }),
  );
  const elapsed = Date.now() - started;
  const statuses = answers.map((r) => r.status);
  report('F-4 cut', {
    requests: answers.length,
    lost: 0,
    duplicated: 0,
    s503: statuses.filter((s) => s === 503).length,
    s500: statuses.filter((s) => s === 500).length,
    slowestMs: elapsed,
  });
  for (const answer of answers) {
    expect(answer).toEqual({ status: 503, type: 'https://chatapp.example/problems/unavailable', retryAfter: expect.stringMatching(/^\d+$/) });
  }
  // A connection attempt gives up after 5 s (server/store/db.ts); nothing waits longer.
  expect(elapsed).toBeLessThan(15_000);
  // Liveness is not readiness: the process is fine, and restarting it would not bring the database back.
  const live = await fetch(`${seed.url}/healthz`);
  expect([live.status, await live.json()]).toEqual([200, { status: 'ok' }]);

  proxy.restore();
  await waitFor(async () => (await fetch(`${seed.url}/readyz`)).status === 200, 20_000, 'readyz 200 after restore');
  expect((await fetch(status, { headers })).status).toBe(200);

  // The LISTEN connection of A came back: an event caused on B reaches a stream held by A. The
  // listener reconnects with backoff (≤ 5 s), so the first attempts may still miss the NOTIFY.
  const verified = await waitFor(
    async () => {
      const session = await startSession(seed, b.info.url);
      const stream = await openStream(seed.url, session);
      expect(await sendLogin(b.info.url, seed, session.loginCode)).toBe(200);
      const ok = await stream.until('event: verified', 3_000);
      stream.close();
      return ok && session;
    },
    30_000,
    'a verified event pushed to A after recovery',
  );
  // ... and A's outbox worker delivers (B's too: either may take the row, once).
  const row = await waitFor(
    () =>
      database.db
        .selectFrom('outbox')
        .select(['event_id', 'status'])
        .where('status', '=', 'succeeded')
        .execute()
        .then((rows) => rows.length > 0 && rows),
    20_000,
    'webhook delivered after recovery',
  );
  expect(verified.sessionId).toBeTruthy();
  expect(receiver.received.map((r) => JSON.parse(r.body).id)).toEqual(expect.arrayContaining(row.map((r) => r.event_id)));
}, 120_000);

it('F-5 database refusing connections at start: the server exits non-zero instead of serving', async () => {
  proxy.cut();
  try {
    // server/server.ts itself: it never prints the ready line, so startChild rejects at its exit.
    await expect(
      startChild('../../server/server.ts', {
        DATABASE_URL: proxy.via(database.url),
        DATA_DIR: mkdtempSync(join(tmpdir(), 'faults-start-')),
        SECRET_KEY,
        PORT: '0',
        LOG_LEVEL: 'silent',
        DEMO: 'false',
        START_TIMEOUT_SECONDS: '30',
      }),
    ).rejects.toThrow(/exited with [1-9]/);
  } finally {
    proxy.restore();
  }
}, 60_000);
