// PostgreSQL ending our connections (a restart, a failover, pg_terminate_backend) must not take
// the process down: the idle pool clients and the LISTEN connection report the error, and the
// next query opens a new connection. Only meaningful on PostgreSQL (`npm run test:pg`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { elapse } from '#test/support/eventually.js';

describe.runIf(onPostgres)('PostgreSQL connections ended by the server', () => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  const uncaught: unknown[] = [];
  const record = (error: unknown) => uncaught.push(error);

  beforeAll(async () => {
    store = await openTestStore();
    process.on('uncaughtException', record);
  });
  afterAll(async () => {
    process.off('uncaughtException', record);
    await store.close();
  });

  it('terminated idle and LISTEN connections: no uncaught error, the next query works', async () => {
    await store.listen('connection_loss_test', () => {});
    await sql`select 1`.execute(store.db); // an idle pool client exists now
    const database = new URL(store.url!).pathname.slice(1);
    // From another connection of the pool: end every other backend of this database.
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity
      where datname = ${database} and pid <> pg_backend_pid()) t`.execute(store.db);
    expect(rows[0].n).toBeGreaterThanOrEqual(1);
    await elapse(300, 'absence: an uncaught error from the ended connections would surface by then');
    expect(uncaught).toEqual([]);
    const again = await sql<{ one: number }>`select 1 as one`.execute(store.db);
    expect(again.rows[0].one).toBe(1);
  });
});
