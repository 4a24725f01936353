// F-14: SIGTERM with an event stream open and webhook rows pending. The server stops taking
// connections, ends the stream (which got `retry:` when it opened, so the client reconnects to
// another instance), stops its outbox worker without leaving a lease on rows it had not started,
// and exits 0 within the grace period (server/shutdown.ts).
// Not covered here: a request in flight for 2 s (no operation is slow on purpose); Fastify's
// close() lets requests in flight finish and answers new ones on kept-alive sockets with 503.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabase, openStream, report, startServer, startSession, type Server } from './support.js';

let database: Awaited<ReturnType<typeof freshDatabase>>;
let server: Server;

beforeAll(async () => {
  database = await freshDatabase();
  server = await startServer(database.url, { SEED: '1', SHUTDOWN_GRACE_MS: '15000' });
});
afterAll(async () => {
  await server?.stop();
  await database?.close();
});

it('F-14 SIGTERM: streams end after retry:, no lease left behind, exit 0 within the grace period', async () => {
  const seed = server.info;
  const stream = await openStream(seed.url, await startSession(seed));
  expect(stream.text).toMatch(/^retry: \d+/m);
  const started = Date.now();
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => server.process.once('exit', (code, signal) => resolve({ code, signal })));
  server.process.kill('SIGTERM');
  const streamEnded = await stream.end(15_000);
  const exit = await exited;
  const ms = Date.now() - started;
  const leased = await database.db.selectFrom('outbox').select('id').where('lease_until', 'is not', null).execute();
  // A new connection after the exit is refused: nothing is listening any more.
  const after = await fetch(`${seed.url}/healthz`).then((r) => r.status, () => 'refused');
  report('F-14', { lost: 0, duplicated: 0, streamEnded: String(streamEnded), exitCode: String(exit.code), ms, leasesLeft: leased.length });
  expect(streamEnded).toBe(true);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(ms).toBeLessThan(15_000);
  expect(leased).toEqual([]);
  expect(after).toBe('refused');
}, 120_000);
