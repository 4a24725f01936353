// Reader sessions as CSV: a header and one row per session, oldest first, for a link and a
// document; formula-like values neutralised and separators quoted (CSV injection); more than one
// page of the stream, each line as the JavaScript writer makes it; another workspace's id: 404.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
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

  it('streams more than one page of sessions, in order, each line as csvField writes it', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const db = app.platform.store.db;
    const base = Date.parse('2026-11-01T00:00:00Z');
    const devices = ['desktop', '=cmd|calc', '-1', 'a,b', 'say "x"', 'two\nlines', '@x', 'Zoë 🌻', '+plus', '\ttab', '\rcr', 'cr\rinside'];
    const n = 5203; // more than one page of 5,000 on PGlite
    await db
      .insertInto('reader_sessions')
      .values(
        Array.from({ length: n }, (_, i) => ({
          id: `rs_bulk${String(i).padStart(8, '0')}${link.id.slice(4, 12)}`,
          workspace_id: a.workspaceId,
          link_id: link.id,
          document_id: doc.id,
          reader_id: `reader-${i % 7}`,
          token_digest: 'x',
          device: devices[i % devices.length]!,
          // Pairs share a start (the id breaks the tie), across the page's end too.
          started_at: new Date(base + Math.floor(i / 2) * 1000),
          last_activity_at: new Date(base + i * 1000),
          last_event_at: new Date(base + i * 1000),
          ended_at: i % 3 ? new Date(base + i * 1000 + 999) : null,
          duration_ms: i,
        })),
      )
      .execute();
    // Microseconds, as sessions written by SQL have: the cursor must not repeat or skip a row.
    await sql`update reader_sessions set started_at = started_at + interval '456 microseconds' where link_id = ${link.id}`.execute(db);
    const stored = await db.selectFrom('reader_sessions').selectAll().where('link_id', '=', link.id).orderBy('started_at').orderBy('id').execute();
    const { external_id } = await db.selectFrom('links').select('external_id').where('id', '=', link.id).executeTakeFirstOrThrow();
    const reference = stored.map((s) =>
      [
        s.id,
        s.link_id,
        external_id,
        `rdr_${app.platform.secrets.digest(`reader\0${a.workspaceId}\0${s.reader_id}`).slice(0, 16)}`,
        s.version,
        s.device,
        s.started_at.toISOString(),
        s.ended_at?.toISOString() ?? null,
        Number(s.duration_ms),
        0,
        s.downloaded,
      ]
        .map(csvField)
        .join(','),
    );
    for (const url of [`${LINKS}/${link.id}/sessions.csv`, `${DOCS}/${doc.id}/sessions.csv`]) {
      const res = await app.inject({ url, headers: a.auth });
      expect(res.body).toBe(`${[HEADER, ...reference].join('\r\n')}\r\n`);
    }
    expect(reference).toHaveLength(n);
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
