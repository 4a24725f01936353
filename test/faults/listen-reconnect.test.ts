// bad-inputs F-4 at the store level: PostgreSQL ends the dedicated LISTEN connection (a restart or failover
// looks the same to the client); it reconnects and LISTENs again on every channel by itself, so
// a NOTIFY sent afterwards arrives, and tells its `onReconnect` callbacks once per return (what
// the subscribers re-read on). (test/unit/store/connection-loss.test.ts shows the process survives
// the loss; this shows the subscription does too.)
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestStore } from '../support/store.js';
import { report, waitFor } from './support.js';
import { elapse } from '../support/eventually.js';

let store: Awaited<ReturnType<typeof openTestStore>>;
beforeAll(async () => {
  if (!process.env.DATABASE_URL) throw new Error('the faults project needs PostgreSQL: set DATABASE_URL');
  store = await openTestStore();
});
afterAll(async () => store?.close());

it('F-4 LISTEN connection terminated twice: re-LISTENs on every channel, later NOTIFYs arrive once', async () => {
  const got: Record<string, string[]> = { fault_a: [], fault_b: [] };
  await store.listen('fault_a', (p) => got.fault_a.push(p));
  await store.listen('fault_b', (p) => got.fault_b.push(p));
  let reconnects = 0;
  const off = store.onReconnect(() => reconnects++);
  const database = new URL(store.url!).pathname.slice(1);
  for (const round of [1, 2]) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity
      where datname = ${database} and pid <> pg_backend_pid() and query ilike 'listen%') t`.execute(store.db);
    expect(rows[0].n).toBe(1);
    // Notify until one arrives: the reconnect takes a backoff step (≥ 200 ms).
    let sent = 0;
    await waitFor(
      async () => {
        await store.notify('fault_a', `a${round}-${++sent}`);
        await elapse(100, 'a NOTIFY sent while the listener reconnects is lost: send again only after it could arrive');
        return got.fault_a.some((p) => p.startsWith(`a${round}-`));
      },
      15_000,
      `a NOTIFY after termination ${round}`,
    );
    await store.notify('fault_b', `b${round}`);
    await waitFor(() => got.fault_b.includes(`b${round}`), 5_000, 'the second channel');
    expect(reconnects).toBe(round);
  }
  off();
  const duplicated = got.fault_b.length - new Set(got.fault_b).size + got.fault_a.length - new Set(got.fault_a).size;
  report('F-4 listen', { terminations: 2, lost: 2 - got.fault_b.length, duplicated });
  expect(got.fault_b).toEqual(['b1', 'b2']);
  expect(duplicated).toBe(0);
}, 60_000);
