// /readyz (server/ops/readiness.ts): ready only with every check passing and not draining; /healthz
// is liveness and looks at none of it (database, migrations, draining). The database out of reach is proven on
// PostgreSQL in test/faults/readiness.test.ts.
import { sql } from 'kysely';
import { expect, it, vi } from 'vitest';
import { Readiness } from '#server/ops/readiness.js';
import { LATEST_MIGRATION } from '#server/store/migrate.js';
import { build } from '#test/helper.js';

it('is ready once migrated; 503 problem+json naming the check while the last migration is pending', async () => {
  const app = await build();
  const ready = await app.inject({ url: '/readyz' });
  expect(ready.statusCode).toBe(200);
  expect(ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', storage: 'ok' } });
  expect(ready.headers['cache-control']).toBe('no-store');

  // The database as another instance leaves it while it is still running the newest migration.
  const db = app.platform.store.db;
  const [row] = (await sql<Record<string, unknown>>`delete from kysely_migration where name = ${LATEST_MIGRATION} returning *`.execute(db)).rows;
  const pending = await app.inject({ url: '/readyz' });
  expect(pending.statusCode).toBe(503);
  expect(pending.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(pending.headers['retry-after']).toBe('5');
  expect(pending.json()).toMatchObject({ type: 'https://chatapp.example/problems/unavailable', status: 503, detail: 'Not ready: migrations failing.' });
  // Liveness is not readiness: the process is fine, restarting it would not help.
  expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);

  await sql`insert into kysely_migration (name, timestamp) values (${row!.name as string}, ${row!.timestamp as string})`.execute(db);
  expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
}, 60_000); // the first app a worker builds also compiles the contract's validators

it('/healthz is liveness only: 200 while the database fails every query, when /readyz is 503', async () => {
  const app = await build();
  // Every query fails as with PostgreSQL out of reach (connection refused); the process itself is fine.
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const executor = app.platform.store.db.getExecutor();
  const failing = vi.spyOn(executor, 'executeQuery').mockRejectedValue(refused);
  vi.spyOn(app.platform.store.db, 'getExecutor').mockReturnValue(executor);
  try {
    const live = await app.inject({ url: '/healthz' });
    expect(live.statusCode).toBe(200);
    expect(live.json()).toEqual({ status: 'ok' });
    expect(live.headers['cache-control']).toBe('no-store');
    const ready = await app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ detail: 'Not ready: database failing, migrations failing.' });
    expect(failing).toHaveBeenCalled();
  } finally {
    vi.restoreAllMocks();
  }
  expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
});

it('is not ready from the start of shutdown on (preClose), whatever the checks say', async () => {
  const app = await build();
  expect(app.platform.readiness.draining).toBe(false);
  app.platform.readiness.drain();
  const res = await app.inject({ url: '/readyz' });
  expect(res.statusCode).toBe(503);
  expect(res.json()).toMatchObject({ detail: 'The server is shutting down.' });
  const fresh = await build();
  await fresh.close();
  expect(fresh.platform.readiness.draining).toBe(true);
});

it('runs pluggable checks at once, each bounded by the timeout, and never reports their error text', async () => {
  const readiness = new Readiness(50);
  readiness.add('redis', async () => {
    throw new Error('connect ECONNREFUSED 10.0.0.7:6379 password=hunter2');
  });
  readiness.add('storage', () => new Promise(() => {})); // hangs
  expect(() => readiness.add('redis', async () => {})).toThrow(/twice/);
  expect(await readiness.report()).toEqual({ ready: false, draining: false, checks: { redis: 'failing', storage: 'timeout' } });
  const ok = new Readiness(50);
  ok.add('redis', async () => {});
  expect(await ok.report()).toEqual({ ready: true, draining: false, checks: { redis: 'ok' } });
});
