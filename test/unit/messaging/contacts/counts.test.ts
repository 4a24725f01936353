// Counts of tags and segments (contacts/counts.ts): live up to LIVE_COUNT_LIMIT, above it stored
// on the row and answered while fresh, an old one answered while a full count replaces it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { contactCounts, COUNT_TTL_MS, LIVE_COUNT_LIMIT } from '#server/apis/messaging/contacts/counts.js';
import type { Store } from '#server/store/db.js';
import { eventually } from '#test/support/eventually.js';
import { openTestStore } from '#test/support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
  await store.db.insertInto('workspaces').values({ id: 'ws_counts0001', name: 'W', slug: 'counts' }).execute();
  await store.db
    .insertInto('tags')
    .values([
      { id: 'tag_small0001', workspace_id: 'ws_counts0001', name: 'small' },
      { id: 'tag_large0001', workspace_id: 'ws_counts0001', name: 'large' },
    ])
    .execute();
});
afterAll(async () => store.close());

const row = async (id: string) => store.db.selectFrom('tags').select(['id', 'contact_count', 'counted_at']).where('id', '=', id).executeTakeFirstOrThrow();

it('small counts are live and not stored; a large one is counted once, then answered from the row until it is old', async () => {
  let fullCounts = 0;
  let total = 25_000;
  const bounded = async (id: string) => (id === 'tag_small0001' ? 7 : LIVE_COUNT_LIMIT + 1);
  const full = async () => {
    fullCounts++;
    return total;
  };
  const t0 = new Date();
  const first = await contactCounts(store.db, 'tags', [await row('tag_small0001'), await row('tag_large0001')], bounded, full, t0);
  expect(Object.fromEntries(first)).toEqual({ tag_small0001: 7, tag_large0001: 25_000 });
  expect(fullCounts).toBe(1);
  expect((await row('tag_small0001')).contact_count).toBeNull();
  expect((await row('tag_large0001')).contact_count).toBe(25_000);

  total = 26_000;
  const fresh = await contactCounts(store.db, 'tags', [await row('tag_large0001')], bounded, full, new Date(t0.getTime() + 1000));
  expect(fresh.get('tag_large0001')).toBe(25_000);
  expect(fullCounts).toBe(1);

  // Old: the stored count is answered, and a full count replaces it after the answer.
  const old = await contactCounts(store.db, 'tags', [await row('tag_large0001')], bounded, full, new Date(t0.getTime() + COUNT_TTL_MS + 1));
  expect(old.get('tag_large0001')).toBe(25_000);
  await eventually(async () => (await row('tag_large0001')).contact_count === 26_000, { what: 'the count made again' });
  expect(fullCounts).toBe(2);
});
