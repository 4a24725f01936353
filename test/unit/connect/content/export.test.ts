// Reader sessions as CSV: a header and one row per session, oldest first, for a link and a
// document; formula-like values neutralised and separators quoted (CSV injection); more than one
// page of the stream; another workspace's id: 404.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { csvField } from '#server/apis/connect/content/export.js';
import { buildShared } from '#test/helper.js';
import { DOCS, LINKS, newDocument, newLink, openViewer, tenant, type Tenant } from './support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app, 'export-a');
  b = await tenant(app, 'export-b');
});

const HEADER = 'session_id,link_id,external_id,reader,version,device,started_at,ended_at,duration_ms,pages_viewed,downloaded';

describe('reader sessions as CSV', () => {
  it('one row per session, for a link and for the document; a formula-like external_id is neutralised', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id, { external_id: '=HYPERLINK("http://evil.test","x")' });
    const other = await newLink(app, a, doc.id);
    const first = await openViewer(app, link.url);
    await openViewer(app, other.url);

    const res = await app.inject({ url: `${LINKS}/${link.id}/sessions.csv`, headers: a.auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="sessions-${link.id}.csv"`);
    const lines = res.body.split('\r\n');
    expect(lines[0]).toBe(HEADER);
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(new RegExp(`^${first.sessionId},${link.id},"'=HYPERLINK\\(""http://evil.test"",""x""\\)",rdr_[0-9a-f]{16},1,desktop,`));
    expect(lines[1]).toMatch(/,,0,1,false$/); // open session: no end yet; page 1 shown

    const all = await app.inject({ url: `${DOCS}/${doc.id}/sessions.csv`, headers: a.auth });
    expect(all.body.split('\r\n').filter(Boolean)).toHaveLength(3);
  });

  it('streams more than one page of sessions, in order', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const db = app.platform.store.db;
    const base = Date.parse('2026-11-01T00:00:00Z');
    await db
      .insertInto('reader_sessions')
      .values(
        Array.from({ length: 1203 }, (_, i) => ({
          id: `rs_bulk${String(i).padStart(8, '0')}${link.id.slice(4, 12)}`,
          workspace_id: a.workspaceId,
          link_id: link.id,
          document_id: doc.id,
          reader_id: 'r'.repeat(24),
          token_digest: 'x',
          device: 'desktop',
          started_at: new Date(base + i * 1000),
          last_activity_at: new Date(base + i * 1000),
          last_event_at: new Date(base + i * 1000),
          duration_ms: i,
        })),
      )
      .execute();
    const res = await app.inject({ url: `${LINKS}/${link.id}/sessions.csv`, headers: a.auth });
    const rows = res.body.split('\r\n').filter(Boolean).slice(1);
    expect(rows).toHaveLength(1203);
    expect(rows.map((r) => Number(r.split(',')[8]))).toEqual(Array.from({ length: 1203 }, (_, i) => i));
  });

  it('csvField: quotes separators, doubles quotes, neutralises formulas', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    for (const f of ['=1+1', '+1', '-1', '@SUM(A1)']) expect(csvField(f)).toBe(`'${f}`);
    expect(csvField(-5)).toBe('-5'); // numbers are ours, not formulas
    expect(csvField(null)).toBe('');
  });

  it('another workspace’s link or document: 404 problem, no CSV', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    for (const url of [`${LINKS}/${link.id}/sessions.csv`, `${DOCS}/${doc.id}/sessions.csv`]) {
      const res = await app.inject({ url, headers: b.auth });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
  });
});
