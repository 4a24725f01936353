// Counts of tags and segments (contacts/counts.ts): live in a workspace of up to
// LIVE_COUNT_LIMIT contacts; in a larger one stored on the row and answered while fresh, an old
// one answered while a full count replaces it.
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { contactCounts, COUNT_TTL_MS, LIVE_COUNT_LIMIT } from '#server/apis/messaging/contacts/counts.js';
import type { Store } from '#server/store/db.js';
import { eventually } from '#test/support/eventually.js';
import { openTestStore } from '#test/support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
  for (const [id, slug] of [
    ['ws_countsSmall1', 'small'],
    ['ws_countsLarge1', 'large'],
  ])
    await store.db.insertInto('workspaces').values({ id, name: 'W', slug }).execute();
  await store.db
    .insertInto('tags')
    .values([
      { id: 'tag_small0001', workspace_id: 'ws_countsSmall1', name: 'a' },
      { id: 'tag_large0001', workspace_id: 'ws_countsLarge1', name: 'b' },
    ])
    .execute();
  await sql`insert into contacts (id, workspace_id, phone) select 'ct_countsL' || lpad(i::text, 8, '0'), 'ws_countsLarge1', '+4915' || lpad(i::text, 9, '0')
    from generate_series(1, ${LIVE_COUNT_LIMIT + 1}::int) i`.execute(store.db);
});
afterAll(async () => store.close());

const row = async (id: string) => store.db.selectFrom('tags').select(['id', 'contact_count', 'counted_at']).where('id', '=', id).executeTakeFirstOrThrow();

it('a small workspace counts live every time and stores nothing', async () => {
  let n = 3;
  const count = async () => n;
  expect((await contactCounts(store.db, 'tags', 'ws_countsSmall1', [await row('tag_small0001')], count, new Date())).get('tag_small0001')).toBe(3);
  n = 4;
  expect((await contactCounts(store.db, 'tags', 'ws_countsSmall1', [await row('tag_small0001')], count, new Date())).get('tag_small0001')).toBe(4);
  expect((await row('tag_small0001')).contact_count).toBeNull();
});

it('a large workspace counts once, then answers the stored count until it is old, and counts again after that answer', async () => {
  let counts = 0;
  let total = 25_000;
  const count = async () => {
    counts++;
    return total;
  };
  const t0 = new Date();
  const first = await contactCounts(store.db, 'tags', 'ws_countsLarge1', [await row('tag_large0001')], count, t0);
  expect(first.get('tag_large0001')).toBe(25_000);
  expect((await row('tag_large0001')).contact_count).toBe(25_000);
  total = 26_000;
  const fresh = await contactCounts(store.db, 'tags', 'ws_countsLarge1', [await row('tag_large0001')], count, new Date(t0.getTime() + 1000));
  expect(fresh.get('tag_large0001')).toBe(25_000);
  expect(counts).toBe(1);
  const old = await contactCounts(store.db, 'tags', 'ws_countsLarge1', [await row('tag_large0001')], count, new Date(t0.getTime() + COUNT_TTL_MS + 1));
  expect(old.get('tag_large0001')).toBe(25_000);
  await eventually(async () => (await row('tag_large0001')).contact_count === 26_000, { what: 'the count made again' });
  expect(counts).toBe(2);
});
