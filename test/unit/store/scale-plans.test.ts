// Every list, search, filter, segment and analytics read of a large workspace is served by an index
// (docs/scale.md): on PostgreSQL, with 100,000 contacts seeded (bench/lib/scale-seed.ts), each
// request below runs through the whole app while every SELECT it sends is recorded; then each
// is EXPLAINed (FORMAT JSON) with its own parameters and fails on a sequential scan of a table
// that grows with the workspace. PostgreSQL only: PGlite's planner sees other costs, and a
// plan on a few rows says nothing.
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { connectBearer } from '#test/support/connect.js';
import { openTestStore, onPostgres } from '#test/support/store.js';
import { tenant, type Tenant } from '#test/unit/messaging/contacts/support.js';
import { seedScale, type ScaleSeedResult } from '../../../bench/lib/scale-seed.js';

/** Tables whose size is the workspace's: a sequential scan of one is a pass over the workspace. */
const WORKSPACE_SIZED = new Set(['contacts', 'contact_tags', 'chats', 'messages', 'reader_sessions', 'reader_page_stats', 'campaign_recipients']);
const CONTACTS = 100_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function seqScans(node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name'] && WORKSPACE_SIZED.has(node['Relation Name'])) out.push(node['Relation Name']);
  for (const child of node.Plans ?? []) seqScans(child, out);
  return out;
}

describe.skipIf(!onPostgres)('query plans at 100,000 contacts', () => {
  let app: FastifyInstance;
  let t: Tenant;
  let seeded: ScaleSeedResult;
  let url: string;
  let admin: pg.Client;
  const recorded: { text: string; values: unknown[]; seqscanOff: boolean }[] = [];
  /** Connections inside a transaction that priced sequential scans out (contacts/on-indexes.ts). */
  const seqscanOff = new WeakSet<pg.Client>();
  const original = pg.Client.prototype.query;

  beforeAll(async () => {
    const store = await openTestStore();
    url = store.url!;
    app = await buildShared({ overrides: { store } });
    t = await tenant(app);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    seeded = await seedScale(admin, t.workspaceId, 'Plans1', { contacts: CONTACTS, messages: 20_000, sessions: 20_000 });
    // Every statement the app's pool sends is recorded (the plans are read on `admin`, unrecorded).
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const [text, values] = args as [unknown, unknown];
      if (this !== admin && typeof text === 'string') {
        if (/^\s*set local enable_seqscan = off/i.test(text)) seqscanOff.add(this);
        else if (/^\s*(commit|rollback)/i.test(text)) seqscanOff.delete(this);
        else if (/^\s*select/i.test(text)) recorded.push({ text, values: Array.isArray(values) ? values : [], seqscanOff: seqscanOff.has(this) });
      }
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof original;
  }, 120_000);

  afterAll(async () => {
    pg.Client.prototype.query = original;
    await admin?.end();
  });

  /** Runs the request; answers its body and the workspace-sized tables scanned sequentially by any of its SELECTs. */
  async function read(path: string, bearer?: string): Promise<{ found: string[]; body: { next_cursor?: string | null } }> {
    recorded.length = 0;
    const res = bearer
      ? await app.inject({ url: path, headers: { authorization: `Bearer ${bearer}` } }).then((r) => ({ status: r.statusCode, body: r.json() }))
      : await t.call('GET', path);
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    const statements = recorded.splice(0);
    expect(statements.length).toBeGreaterThan(0);
    const found: string[] = [];
    for (const s of statements) {
      // Planned as the app planned it: with sequential scans priced out where it had them so.
      await admin.query(s.seqscanOff ? 'set enable_seqscan = off' : 'reset enable_seqscan');
      const plan = await admin.query(`explain (format json) ${s.text}`, s.values);
      const root = (plan.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
      for (const table of seqScans(root)) found.push(`${table} in: ${s.text.slice(0, 160)}`);
    }
    return { found, body: res.body };
  }

  const lists = [
    '/api/contacts?limit=20',
    '/api/contacts?limit=20&sort=created_at',
    '/api/contacts?limit=20&sort=name',
    '/api/contacts?limit=20&sort=-name',
    '/api/contacts?limit=20&sort=-last_inbound_at',
    `/api/contacts?limit=20&q=${encodeURIComponent('zzqxv')}`,
    `/api/contacts?limit=20&q=${encodeURIComponent('Müller')}`,
    `/api/contacts?limit=20&q=${encodeURIComponent('151 0000 12')}`,
    `/api/contacts?limit=20&q=${encodeURIComponent('user4242@')}`,
    '/api/contacts?limit=20&tag=vip&tag=berlin',
    '/api/contacts?limit=20&tag=wholesale&sort=name',
    '/api/contacts?limit=20&custom_field=plan:enterprise',
    '/api/contacts?limit=20&custom_field=city:lyon&sort=-name',
    '/api/chatapp/chats?limit=20',
    '/api/tags',
    '/api/campaigns?limit=20',
  ];

  it.each(lists)('%s: first and second page on indexes', async (path) => {
    const first = await read(path);
    expect(first.found).toEqual([]);
    if (first.body.next_cursor) {
      const second = await read(`${path}&cursor=${encodeURIComponent(first.body.next_cursor)}`);
      expect(second.found).toEqual([]);
    }
  });

  it("one contact's messages", async () => {
    const chat = (await t.call('GET', '/api/chatapp/chats?limit=1')).body.data[0];
    const contactId = chat.contact_id ?? chat.contact?.id;
    expect(contactId).toBeTruthy();
    expect((await read(`/api/chatapp/messages?limit=20&contact_id=${contactId}`)).found).toEqual([]);
  });

  it('segments: their list with counts, and a preview of the members', async () => {
    const created = await t.call('POST', '/api/segments', {
      name: 'Pro in Lyon',
      filter: {
        match: 'all',
        conditions: [
          { field: 'custom_fields.plan', operator: 'eq', value: 'pro' },
          { field: 'custom_fields.city', operator: 'eq', value: 'Lyon' },
          { field: 'tag', operator: 'eq', value: 'wholesale' },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await read('/api/segments?limit=20')).found).toEqual([]);
    expect((await read(`/api/contacts?limit=20&segment_id=${created.body.id}`)).found).toEqual([]);
  });

  it('analytics of the busy link and document, and their 90-day series: rollups and covering indexes', async () => {
    const bearer = await connectBearer(app, t.workspaceId);
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const range = `from=${day(Date.now() - 89 * 86_400_000)}&to=${day(Date.now())}`;
    for (const path of [
      `/api/connect/links/${seeded.busyLinkId}/analytics`,
      `/api/connect/documents/${seeded.busyDocumentId}/analytics`,
      `/api/connect/links/${seeded.busyLinkId}/analytics/daily?${range}`,
      `/api/connect/documents/${seeded.busyDocumentId}/analytics/daily?time_zone=Europe/Berlin&${range}`,
    ])
      expect((await read(path, bearer)).found, path).toEqual([]);
  });

  it('the seeded workspace is the size the plans are meant for', async () => {
    const { rows } = await admin.query('select count(*)::int as n from contacts where workspace_id = $1', [t.workspaceId]);
    expect(rows[0].n).toBe(CONTACTS);
    expect(seeded.tagIds).toHaveLength(12);
  });
});
