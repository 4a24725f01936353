// audienceQuery and checkAudience (used by campaigns): selectors narrow one another, tags match
// any or all, segments apply their saved filter, other workspaces' ids are refused naming the field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '#server/lib/ids.js';
import { audienceQuery, checkAudience } from '#server/apis/messaging/contacts/audience.js';
import { openTestStore } from '#test/support/store.js';
import type { Store } from '#server/store/db.js';
import type { SegmentFilterRow } from '#server/store/schema/messaging-crm.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => store.close());

async function workspace() {
  const db = store.db;
  const ws = newId('ws');
  await db.insertInto('workspaces').values({ id: ws, name: 'W', slug: ws.toLowerCase() }).execute();
  const contact = async (phone: string, name: string, custom: Record<string, string | number> = {}) =>
    (
      await db
        .insertInto('contacts')
        .values({ id: newId('ct'), workspace_id: ws, phone, name, custom_fields: JSON.stringify(custom) })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  const tag = async (name: string) =>
    (
      await db
        .insertInto('tags')
        .values({ id: newId('tag'), workspace_id: ws, name })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  const link = (contact_id: string, tag_id: string) => db.insertInto('contact_tags').values({ contact_id, tag_id }).execute();
  const segment = async (filter: SegmentFilterRow) =>
    (
      await db
        .insertInto('segments')
        .values({ id: newId('seg'), workspace_id: ws, name: newId('s'), filter: JSON.stringify(filter) })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  await db
    .insertInto('custom_fields')
    .values({ id: newId('cf'), workspace_id: ws, key: 'city', label: 'City', type: 'text', options: null })
    .execute();
  return { ws, contact, tag, link, segment };
}

const ids = async (q: Promise<{ execute(): Promise<{ id: string }[]> }>) => (await (await q).execute()).map((r) => r.id).sort();

describe('audience', () => {
  it('all, contact ids, tags any/all, segment, and their intersection', async () => {
    const w = await workspace();
    const a = await w.contact('+4915110000001', 'Anna', { city: 'Berlin' });
    const b = await w.contact('+4915110000002', 'Ben', { city: 'Hamburg' });
    const c = await w.contact('+4915110000003', 'Cem', { city: 'berlin' });
    const vip = await w.tag('vip');
    const news = await w.tag('News');
    await w.link(a, vip);
    await w.link(a, news);
    await w.link(b, news);
    const berlin = await w.segment({ match: 'all', conditions: [{ field: 'custom_fields.city', operator: 'eq', value: 'BERLIN' }] });
    const db = store.db;
    expect(await ids(audienceQuery(db, w.ws, { all: true }))).toEqual([a, b, c].sort());
    expect(await ids(audienceQuery(db, w.ws, {}))).toEqual([]);
    expect(await ids(audienceQuery(db, w.ws, { contactIds: [a, c] }))).toEqual([a, c].sort());
    expect(await ids(audienceQuery(db, w.ws, { tagIds: [vip, news] }))).toEqual([a, b].sort());
    expect(await ids(audienceQuery(db, w.ws, { tagIds: [vip, news], tagMatch: 'all' }))).toEqual([a]);
    expect(await ids(audienceQuery(db, w.ws, { tagNames: ['news'] }))).toEqual([a, b].sort());
    expect(await ids(audienceQuery(db, w.ws, { segmentId: berlin }))).toEqual([a, c].sort());
    expect(await ids(audienceQuery(db, w.ws, { tagNames: ['NEWS'], segmentId: berlin }))).toEqual([a]);
    // usable as the source of an insert … select
    const rows = await (await audienceQuery(db, w.ws, { all: true })).select('contacts.phone').orderBy('contacts.phone').execute();
    expect(rows.map((r) => r.phone)).toEqual(['+4915110000001', '+4915110000002', '+4915110000003']);
  });

  it("B3 another workspace's contact, tag or segment ids: 404 naming the field; selects nobody", async () => {
    const mine = await workspace();
    const theirs = await workspace();
    const ct = await theirs.contact('+4915110000009', 'Zoe');
    const tag = await theirs.tag('vip');
    const seg = await theirs.segment({ match: 'any', conditions: [{ field: 'tag', operator: 'exists' }] });
    const db = store.db;
    await expect(checkAudience(db, mine.ws, { contactIds: [ct] })).rejects.toMatchObject({
      status: 404,
      problem: { errors: [{ pointer: '/body/audience/contact_ids' }] },
    });
    await expect(checkAudience(db, mine.ws, { tagIds: [tag] })).rejects.toMatchObject({
      status: 404,
      problem: { errors: [{ pointer: '/body/audience/tag_ids' }] },
    });
    await expect(checkAudience(db, mine.ws, { tagNames: ['vip'] }, { tagNames: '/body/tags' })).rejects.toMatchObject({
      status: 404,
      problem: { errors: [{ pointer: '/body/tags' }] },
    });
    await expect(checkAudience(db, mine.ws, { segmentId: seg })).rejects.toMatchObject({
      status: 404,
      problem: { errors: [{ pointer: '/body/audience/segment_id' }] },
    });
    expect(await ids(audienceQuery(db, mine.ws, { contactIds: [ct] }))).toEqual([]);
    expect(await ids(audienceQuery(db, mine.ws, { tagIds: [tag] }))).toEqual([]);
    expect(await ids(audienceQuery(db, mine.ws, { segmentId: seg }))).toEqual([]);
    await expect(checkAudience(db, theirs.ws, { contactIds: [ct], tagIds: [tag], segmentId: seg })).resolves.toBeUndefined();
  });
});
