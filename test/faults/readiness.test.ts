// /readyz with the database out of reach (server/ops/readiness.ts): a TCP proxy between the server
// and PostgreSQL is cut, as a PostgreSQL restart or a network cut would (database-unreachable.test.ts):
// /readyz answers 503 problem+json naming the database within its check timeout, so that a load
// balancer takes the instance out; restored, it answers 200 again by itself, without a restart.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startProxy } from './proxy.js';
import { freshDatabase, report, startServer, waitFor, type Server } from './support.js';

let database: Awaited<ReturnType<typeof freshDatabase>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let server: Server;

beforeAll(async () => {
  database = await freshDatabase();
  const target = new URL(database.url);
  proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5432) });
  server = await startServer(proxy.via(database.url));
});
afterAll(async () => {
  proxy?.restore();
  await server?.stop();
  await proxy?.close();
  await database?.close();
});

it('readyz: 503 naming the database while it is cut, 200 again once it is back', async () => {
  const url = `${server.info.url}/readyz`;
  const before = await fetch(url);
  expect(before.status).toBe(200);
  expect(await before.json()).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', storage: 'ok' } });

  proxy.cut();
  const started = Date.now();
  const cut = await fetch(url);
  const ms = Date.now() - started;
  const body = (await cut.json()) as { type: string; detail: string };
  expect(cut.status).toBe(503);
  expect(cut.headers.get('retry-after')).toBe('5');
  expect(body.type).toBe('https://chatapp.example/problems/unavailable');
  expect(body.detail).toMatch(/^Not ready: database (failing|timeout), migrations (failing|timeout)\.$/);
  // Each check is bounded (2 s): a load balancer's probe gets its answer before its own timeout.
  expect(ms).toBeLessThan(5_000);

  proxy.restore();
  const recoveredMs = await waitFor(async () => (await fetch(url)).status === 200 && Date.now() - started, 20_000, 'readyz 200 after restore');
  report('readyz cut', { lost: 0, duplicated: 0, answerMs: ms, readyAgainAfterMs: recoveredMs });
}, 60_000);
