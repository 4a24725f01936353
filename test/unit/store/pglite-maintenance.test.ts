// PGlite has no autovacuum; the store does its job (server/store/pglite-maintenance.ts): a table
// past autovacuum's thresholds is vacuumed and analysed, one below them is left alone.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '#server/store/db.js';
import { ANALYZE_TARGET } from '#server/store/pglite-maintenance.js';
import { openTestStore } from '#test/support/store.js';

let store: Store;

const stats = async (table: string) => {
  await sql`select pg_stat_force_next_flush()`.execute(store.db);
  return (
    await sql<{ dead: number; changed: number; vacuumed: boolean; analysed: boolean }>`
      select n_dead_tup::int as dead, n_mod_since_analyze::int as changed,
        last_vacuum is not null as vacuumed, last_analyze is not null as analysed
      from pg_stat_user_tables where relname = ${table}`.execute(store.db)
  ).rows[0]!;
};

describe.skipIf(Boolean(process.env.DATABASE_URL))('PGlite maintenance (no autovacuum in single-user mode)', () => {
  // From the migrated template (test/support/store.ts), as every test store: migrating a fresh
  // PGlite here took most of this file's time and, on a busy machine, more than a test's timeout.
  beforeAll(async () => {
    store = await openTestStore({ maintenanceMs: 3_600_000 });
  });
  afterAll(async () => store?.close());

  it('vacuums and analyses a table past the thresholds; leaves one below them alone', async () => {
    await store.db
      .insertInto('workspaces')
      .values(Array.from({ length: 300 }, (_, i) => ({ id: `ws_maint${String(i).padStart(6, '0')}`, name: 'A', slug: `maint-${i}` })))
      .execute();
    for (let i = 0; i < 2; i++) await store.db.updateTable('workspaces').set({ slug: sql`slug || 'x'` }).execute();
    const before = await stats('workspaces');
    expect(before.dead).toBeGreaterThan(50 + 0.2 * 300);
    expect(before.vacuumed).toBe(false);
    await store.maintain!();
    const after = await stats('workspaces');
    expect(after).toMatchObject({ dead: 0, changed: 0, vacuumed: true, analysed: true });
    // Sampled at the store's own target, not the default 100: 300 distinct slugs give 11 bounds.
    const { rows } = await sql<{ bounds: number }>`
      select array_length(histogram_bounds::text::text[], 1) as bounds from pg_stats where tablename = 'workspaces' and attname = 'slug'`.execute(store.db);
    expect(rows[0]?.bounds).toBe(ANALYZE_TARGET + 1);
    expect(await stats('owners')).toMatchObject({ vacuumed: false, analysed: false });
  });

  it('stops with the store: a pass after close is not started (no error logged)', async () => {
    const other = await openTestStore({ maintenanceMs: 3_600_000 });
    await other.close();
    const writes: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => writes.push(String(chunk)) > 0) as typeof write;
    try {
      await other.maintain!();
    } finally {
      process.stderr.write = write;
    }
    expect(writes).toEqual([]);
  });
});
