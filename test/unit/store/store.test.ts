// The store on PGlite (and on PostgreSQL under npm run test:pg): migrations, affected-row
// counts, one transaction at a time on PGlite's single connection, LISTEN/NOTIFY.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migrateToLatest } from '#server/store/migrate.js';
import type { Store } from '#server/store/db.js';
import { openTestStore } from '#test/support/store.js';
import { elapse } from '#test/support/eventually.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
}, 60_000);
afterAll(async () => store?.close());

describe(`store (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('runs migrations once: a second run changes nothing', async () => {
    await migrateToLatest(store.db);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(store.db);
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it('reports affected-row counts for insert, update and delete', async () => {
    const ins = await store.db
      .insertInto('workspaces')
      .values([
        { id: 'ws_rows0000001', name: 'A', slug: 'rows-a' },
        { id: 'ws_rows0000002', name: 'B', slug: 'rows-b' },
      ])
      .executeTakeFirst();
    expect(Number(ins.numInsertedOrUpdatedRows)).toBe(2);
    const upd = await store.db.updateTable('workspaces').set({ name: 'C' }).where('slug', 'like', 'rows-%').executeTakeFirst();
    expect(Number(upd.numUpdatedRows)).toBe(2);
    const del = await store.db.deleteFrom('workspaces').where('slug', '=', 'rows-a').executeTakeFirst();
    expect(Number(del.numDeletedRows)).toBe(1);
    const none = await store.db.updateTable('workspaces').set({ name: 'D' }).where('slug', '=', 'nope').executeTakeFirst();
    expect(Number(none.numUpdatedRows)).toBe(0);
  });

  it('never runs a query inside another caller’s open transaction', async () => {
    await store.db.insertInto('workspaces').values({ id: 'ws_iso00000001', name: 'before', slug: 'iso' }).execute();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tx = store.db
      .transaction()
      .execute(async (t) => {
        await t.updateTable('workspaces').set({ name: 'inside' }).where('slug', '=', 'iso').execute();
        await gate;
        throw new Error('roll back');
      })
      .catch((e: Error) => e.message);
    await elapse(20, 'the transaction reaches its gate, and nothing says when');
    const outside = store.db.selectFrom('workspaces').select('name').where('slug', '=', 'iso').executeTakeFirstOrThrow();
    release();
    expect(await tx).toBe('roll back');
    expect((await outside).name).toBe('before');
  });

  it('delivers NOTIFY to listeners, and notifications sent in a transaction only at commit', async () => {
    const got: string[] = [];
    const unlisten = await store.listen('store_test', (p) => got.push(p));
    await store.notify('store_test', 'one');
    await store.db.transaction().execute(async (t) => {
      await sql`select pg_notify('store_test', 'two')`.execute(t);
    });
    await store.db
      .transaction()
      .execute(async (t) => {
        await sql`select pg_notify('store_test', 'never')`.execute(t);
        throw new Error('abort');
      })
      .catch(() => {});
    await elapse(100, 'absence: a rolled-back NOTIFY would have arrived by then');
    await unlisten();
    expect(got).toEqual(['one', 'two']);
  });

  it('refuses channel names that are not plain identifiers', async () => {
    await expect(store.notify('x; drop table workspaces', '')).rejects.toThrow(/channel/);
  });
});
