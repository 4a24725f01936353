// GET /api/contacts: search (bad-inputs J1), tag, custom-field and segment filters, sorts (bad-inputs J2), keyset
// pages (bad-inputs B6, H9, H10), and isolation of searches and totals (bad-inputs B5).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { PROBLEM, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
const ids: Record<string, string> = {};

beforeAll(async () => {
  app = await buildShared();
  [a, b] = [await tenant(app), await tenant(app)];
  await a.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
  await a.call('POST', '/api/custom-fields', { key: 'orders', label: 'Orders', type: 'number' });
  const people: [string, string, object][] = [
    ['anna', '+4915110000001', { name: 'Anna 100% Müller', email: 'anna@example.com', tags: ['vip', 'news'], custom_fields: { city: 'Berlin', orders: 3 } }],
    ['ben', '+4915110000002', { name: 'Ben 100 Schulz \\ Jr', email: 'ben_s@example.com', tags: ['news'], custom_fields: { city: 'berlin', orders: 30 } }],
    ['cem', '+4915110000003', { name: "Cem O'Brien", email: 'cem@example.org', tags: ['VIP'], custom_fields: { city: 'Hamburg' } }],
    ['dora', '+4915110000004', { email: 'dora@example.org' }],
  ];
  for (const [key, contact_no, rest] of people) {
    const res = await a.call('POST', '/api/contacts', { contact_no, ...rest });
    if (res.status !== 201) throw new Error(`fixture ${key}: ${res.status} ${JSON.stringify(res.body)}`);
    ids[key] = res.body.id;
  }
  // B's contacts carry A's names: searches in B must never see A's rows
  await b.call('POST', '/api/contacts', { contact_no: '+4915110000001', name: 'Anna in B' });
});

async function names(t: Tenant, query: string) {
  const res = await t.call('GET', `/api/contacts?${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.map((c: { id: string }) => Object.keys(ids).find((k) => ids[k] === c.id) ?? c.id).sort();
}
const q = (s: string) => `q=${encodeURIComponent(s)}`;

describe('search and filters', () => {
  it('q searches name, email and number, case-insensitively; a number typed with spaces matches its digits', async () => {
    expect(await names(a, q('anna'))).toEqual(['anna']);
    expect(await names(a, q('EXAMPLE.ORG'))).toEqual(['cem', 'dora']);
    expect(await names(a, q('10000002'))).toEqual(['ben']);
    expect(await names(a, q('151 1000 0003'))).toEqual(['cem']);
  });

  it('J1 %, _, \\, quotes and SQL in q are plain text', async () => {
    expect(await names(a, q('%'))).toEqual(['anna']);
    expect(await names(a, q('100%'))).toEqual(['anna']);
    expect(await names(a, q('_'))).toEqual(['ben']);
    expect(await names(a, q('\\'))).toEqual(['ben']);
    expect(await names(a, q("O'Brien"))).toEqual(['cem']);
    expect(await names(a, q("' OR 1=1--"))).toEqual([]);
    expect(await names(a, q("'; DROP TABLE contacts;--"))).toEqual([]);
    expect((await a.call('GET', '/api/contacts')).body.data).toHaveLength(4);
  });

  it('tags: every tag must be present (case-insensitive); an unknown tag matches nobody', async () => {
    expect(await names(a, 'tag=vip')).toEqual(['anna', 'cem']);
    expect(await names(a, 'tag=VIP&tag=news')).toEqual(['anna']);
    expect(await names(a, 'tag=nope')).toEqual([]);
    // Each item carries its own tag names, sorted (read in the page's query).
    const page = (await a.call('GET', '/api/contacts?sort=name')).body.data as { email: string | null; tags: string[] }[];
    expect(Object.fromEntries(page.map((c) => [c.email, c.tags]))).toMatchObject({
      'anna@example.com': ['news', 'vip'],
      'ben_s@example.com': ['news'],
      'cem@example.org': ['vip'],
      'dora@example.org': [],
    }); // VIP is the existing tag vip
  });

  it('custom_field: text case-insensitively, numbers numerically; an unknown key or a non-number is a 400', async () => {
    expect(await names(a, 'custom_field=city:BERLIN')).toEqual(['anna', 'ben']);
    expect(await names(a, 'custom_field=orders:3')).toEqual(['anna']);
    expect(await names(a, 'custom_field=orders:3.0&tag=vip')).toEqual(['anna']);
    expect(await names(a, `custom_field=${encodeURIComponent('city:%')}`)).toEqual([]);
    const unknown = await a.call('GET', '/api/contacts?custom_field=shoe:42');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].pointer).toBe('/query/custom_field/0');
    expect((await a.call('GET', '/api/contacts?custom_field=orders:many')).status).toBe(400);
  });

  it("segment_id applies the saved filter; another workspace's segment is a 404", async () => {
    const seg = await a.call('POST', '/api/segments', {
      name: 'Berlin news',
      filter: {
        match: 'all',
        conditions: [
          { field: 'custom_fields.city', operator: 'eq', value: 'berlin' },
          { field: 'tag', operator: 'eq', value: 'news' },
        ],
      },
    });
    expect(seg.status).toBe(201);
    expect(seg.body.contact_count).toBe(2);
    expect(await names(a, `segment_id=${seg.body.id}`)).toEqual(['anna', 'ben']);
    expect(await names(a, `segment_id=${seg.body.id}&custom_field=orders:30`)).toEqual(['ben']);
    const theirs = await b.call('GET', `/api/contacts?segment_id=${seg.body.id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body.type).toBe(`${PROBLEM}not-found`);
  });

  it("B5 B's searches and filters matching A's names see only B's rows", async () => {
    const res = await b.call('GET', `/api/contacts?${q('anna')}`);
    expect(res.body.data.map((c: { name: string }) => c.name)).toEqual(['Anna in B']);
    expect((await b.call('GET', '/api/contacts?tag=vip')).body.data).toEqual([]);
    expect((await b.call('GET', '/api/contacts')).body.data).toHaveLength(1);
    expect((await b.call('GET', '/api/contacts?custom_field=city:Berlin')).status).toBe(400); // B has no such field
  });
});

describe('sorting and pages', () => {
  async function walk(t: Tenant, query: string) {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: any } = await t.call('GET', `/api/contacts?limit=1&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    return seen.map((id) => Object.keys(ids).find((k) => ids[k] === id));
  }

  it('every sort pages through all contacts once, in order; names sort with nulls last', async () => {
    expect(await walk(a, 'sort=name')).toEqual(['anna', 'ben', 'cem', 'dora']);
    expect(await walk(a, 'sort=-name')).toEqual(['cem', 'ben', 'anna', 'dora']);
    expect(await walk(a, 'sort=created_at')).toEqual(['anna', 'ben', 'cem', 'dora']);
    expect(await walk(a, '')).toEqual(['dora', 'cem', 'ben', 'anna']);
    expect((await walk(a, 'sort=-last_inbound_at')).sort()).toEqual(['anna', 'ben', 'cem', 'dora']);
    expect(await walk(a, 'tag=news&sort=name')).toEqual(['anna', 'ben']);
  });

  it("filtered pages of common matches (read in the sort's order first) list each match once, in order", async () => {
    expect(await walk(a, `${q('example')}&sort=created_at`)).toEqual(['anna', 'ben', 'cem', 'dora']);
    expect(await walk(a, q('example'))).toEqual(['dora', 'cem', 'ben', 'anna']);
    expect(await walk(a, `${q('example')}&sort=-name`)).toEqual(['cem', 'ben', 'anna', 'dora']);
    expect(await walk(a, 'custom_field=city:berlin')).toEqual(['ben', 'anna']);
    expect(await walk(a, `${q('example')}&tag=news&sort=created_at`)).toEqual(['anna', 'ben']);
    expect(await walk(a, `${q('.org')}&tag=vip`)).toEqual(['cem']);
  });

  it('J2 sort off the list (name;DROP, password_hash): 400', async () => {
    for (const sort of ['name;DROP', 'password_hash', 'phone']) {
      const res = await a.call('GET', `/api/contacts?sort=${encodeURIComponent(sort)}`);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].pointer).toBe('/query/sort');
    }
  });

  it('H9 limit -1, 0, 1.5, abc, 10^9: 400; no limit gives the default page', async () => {
    for (const limit of ['-1', '0', '1.5', 'abc', '1000000000']) {
      const res = await a.call('GET', `/api/contacts?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body.errors[0].pointer).toBe('/query/limit');
    }
    expect((await a.call('GET', '/api/contacts')).body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('B6/H10 a cursor of another workspace, sort, filter or list, or an edited one: 400', async () => {
    const page = await a.call('GET', '/api/contacts?limit=1&sort=name');
    const cursor = page.body.next_cursor as string;
    const tries: [Tenant, string][] = [
      [b, `sort=name&cursor=${cursor}`],
      [a, `sort=-name&cursor=${cursor}`],
      [a, `sort=name&tag=vip&cursor=${cursor}`],
      [a, `sort=name&cursor=${cursor.slice(0, -3)}`],
      [a, `sort=name&cursor=x${cursor}`],
      [a, 'cursor=not-a-cursor'],
    ];
    for (const [t, query] of tries) {
      const res = await t.call('GET', `/api/contacts?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.errors[0].pointer).toBe('/query/cursor');
    }
    const tags = await a.call('GET', `/api/tags?cursor=${cursor}`);
    expect(tags.status).toBe(400);
  });
});
