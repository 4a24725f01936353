// Queries built once (server/store/prepared.ts) answer what the same query built on every run
// answers, with each run's values, on PGlite and PostgreSQL, on the database and in a transaction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '#server/store/db.js';
import { prepared } from '#server/store/prepared.js';
import { openTestStore } from '#test/support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
}, 60_000);
afterAll(async () => store?.close());

const at = new Date('2026-12-07T07:00:00.123Z');
const insertWorkspace = prepared((db, v: { id: string; name: string; slug: string; created_at: Date }) =>
  db.insertInto('workspaces').values(v).returning(['id', 'name', 'slug', 'created_at']),
);
// A constant of the query (the slug's pattern) beside the slots, and a slot used twice.
const namedOrSlug = prepared((db, v: { name: string }) =>
  db
    .selectFrom('workspaces')
    .select(['id', 'name'])
    .where((eb) => eb.or([eb('name', '=', v.name), eb('slug', '=', v.name)]))
    .where('slug', 'like', 'prep-%')
    .orderBy('id'),
);

describe(`prepared queries (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('runs with each run’s values and answers what the query built each time answers', async () => {
    const a = await insertWorkspace.executeTakeFirst(store.db, { id: 'ws_prep00000001', name: 'Alpha', slug: 'prep-alpha', created_at: at });
    const b = await insertWorkspace.executeTakeFirst(store.db, { id: 'ws_prep00000002', name: 'Beta', slug: 'prep-beta', created_at: at });
    expect(a).toEqual({ id: 'ws_prep00000001', name: 'Alpha', slug: 'prep-alpha', created_at: at });
    expect(b).toEqual({ id: 'ws_prep00000002', name: 'Beta', slug: 'prep-beta', created_at: at });
    for (const name of ['Alpha', 'prep-beta', 'nobody']) {
      const built = await store.db
        .selectFrom('workspaces')
        .select(['id', 'name'])
        .where((eb) => eb.or([eb('name', '=', name), eb('slug', '=', name)]))
        .where('slug', 'like', 'prep-%')
        .orderBy('id')
        .execute();
      expect(await namedOrSlug.execute(store.db, { name })).toEqual(built);
    }
    expect(await namedOrSlug.execute(store.db, { name: 'Beta' })).toEqual([{ id: 'ws_prep00000002', name: 'Beta' }]);
    expect(await namedOrSlug.executeTakeFirst(store.db, { name: 'nobody' })).toBeUndefined();
  });

  it('runs in a transaction, whose rollback undoes it', async () => {
    await expect(
      store.db.transaction().execute(async (tx) => {
        await insertWorkspace.execute(tx, { id: 'ws_prep00000003', name: 'Gamma', slug: 'prep-gamma', created_at: at });
        expect(await namedOrSlug.execute(tx, { name: 'Gamma' })).toEqual([{ id: 'ws_prep00000003', name: 'Gamma' }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await namedOrSlug.execute(store.db, { name: 'Gamma' })).toEqual([]);
  });

  it('refuses, at its first run, a slot that did not become a bind parameter', async () => {
    const inlined = prepared((db, v: { id: string; n: number }) => db.selectFrom('workspaces').select('id').where('id', '=', v.id).limit(sql.lit(1)));
    await expect(inlined.execute(store.db, { id: 'ws_prep00000001', n: 1 })).rejects.toThrow(/prepared query: n did not become a bind parameter/);
  });
});
