// Analytics from rollups (reading.ts, migration 044) answer exactly what aggregating the sessions
// answered: a mix of readers (returning cookies, a verified phone), versions (a pinned link),
// downloads, beacons with clamped time, a session across midnight, sessions on local midnights of
// zones with DST changes and 30/45-minute offsets, and concurrent views on two links of one
// document, compared with the old computation kept here as the oracle. The migration's backfill
// builds the same rows as the views kept up to date one by one.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openSession } from '#server/apis/connect/content/sessions.js';
import { pageStats } from '#server/apis/connect/content/views.js';
import { readingBackfill } from '#server/store/migrations/044_reading_rollups.js';
import { buildShared } from '#test/helper.js';
import { connectBearer } from '#test/support/connect.js';
import { beacon, DOCS, LINKS, multipart, newDocument, newLink, openViewer, pdf, tenant, type Opened, type Tenant } from './support.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let app: FastifyInstance;
let a: Tenant;
let clock = new Date('2026-09-01T08:00:00Z');
const at = (iso: string) => {
  clock = new Date(iso);
};
/** The tenant with a bearer issued now: the test moves the clock by months, past any token's life. */
const who = async (): Promise<Tenant> => ({ ...a, auth: { authorization: `Bearer ${await connectBearer(app, a.workspaceId)}` } });

beforeAll(async () => {
  app = await buildShared({ overrides: { now: () => clock } });
  a = await tenant(app, 'rollups-a');
});

// ---- The oracle: the computations the handlers made before the rollups ----------------------

async function oldTotals(column: 'link_id' | 'document_id', id: string, version?: number) {
  const db = app.platform.store.db;
  const summary = await db
    .selectFrom('reader_sessions')
    .where(column, '=', id)
    .$if(version !== undefined, (q) => q.where('version', '=', version!))
    .select((eb) => [
      eb.fn.countAll<string>().as('views'),
      sql<string>`count(distinct coalesce(verified_phone, reader_id))`.as('unique_readers'),
      sql<string>`coalesce(sum(duration_ms), 0)`.as('total_time_ms'),
      eb.fn.min('started_at').as('first_opened_at'),
      eb.fn.max('started_at').as('last_opened_at'),
      sql<string>`count(*) filter (where downloaded)`.as('downloaded_sessions'),
    ])
    .executeTakeFirstOrThrow();
  const downloads = await db
    .selectFrom('links')
    .where(column === 'link_id' ? 'id' : 'document_id', '=', id)
    .select(sql<string>`coalesce(sum(downloads), 0)`.as('downloads'))
    .executeTakeFirstOrThrow();
  const pages = await db
    .selectFrom('reader_page_stats as p')
    .innerJoin('reader_sessions as s', 's.id', 'p.session_id')
    .where(`s.${column}`, '=', id)
    .$if(version !== undefined, (q) => q.where('s.version', '=', version!))
    .groupBy('p.page')
    .select(['p.page', sql<string>`sum(p.views)`.as('views'), sql<string>`sum(p.time_ms)`.as('time_ms')])
    .execute();
  const date = (value: unknown) => (value ? new Date(value as string | Date).toISOString() : null);
  return {
    views: Number(summary.views),
    unique_readers: Number(summary.unique_readers),
    downloads: Number(version === undefined ? downloads.downloads : summary.downloaded_sessions),
    total_time_ms: Number(summary.total_time_ms),
    pages: pageStats(pages.map((p) => ({ session_id: '', page: p.page, views: Number(p.views), time_ms: p.time_ms }))),
    first_opened_at: date(summary.first_opened_at),
    last_opened_at: date(summary.last_opened_at),
  };
}

async function oldDays(column: 'link_id' | 'document_id', id: string, timeZone: string, from: string, to: string) {
  const format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  const rows = await app.platform.store.db.selectFrom('reader_sessions').select(['started_at', 'reader_id']).where(column, '=', id).execute();
  const days = new Map<string, { views: number; readers: Set<string> }>();
  for (let day = from; day <= to; day = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10))
    days.set(day, { views: 0, readers: new Set() });
  for (const row of rows) {
    const bucket = days.get(format.format(row.started_at));
    if (!bucket) continue;
    bucket.views++;
    bucket.readers.add(row.reader_id);
  }
  return [...days].map(([date, b]) => ({ date, views: b.views, unique_readers: b.readers.size }));
}

// ---- Helpers ------------------------------------------------------------------------------------

const get = async (url: string) => {
  const res = await app.inject({ url, headers: (await who()).auth });
  expect(res.statusCode, `${url} ${res.body}`).toBe(200);
  return res.json();
};

/** Every analytics answer of the document and its links equals the oracle's. */
async function expectSameAsSessions(documentId: string, linkIds: string[], versions: number[]) {
  for (const version of [undefined, ...versions]) {
    const q = version ? `?version=${version}` : '';
    const { document_id, links: _links, ...doc } = await get(`${DOCS}/${documentId}/analytics${q}`);
    expect(document_id).toBe(documentId);
    expect(doc, `document, version ${version}`).toEqual(await oldTotals('document_id', documentId, version));
    for (const linkId of linkIds) {
      const { link_id: _l, document_id: _d, external_id: _e, ...link } = await get(`${LINKS}/${linkId}/analytics${q}`);
      expect(link, `link ${linkId}, version ${version}`).toEqual(await oldTotals('link_id', linkId, version));
    }
  }
}

/** The rollup rows of a document, in key order. */
async function rollupRows(documentId: string) {
  const db = app.platform.store.db;
  const rows = async (table: 'reading_totals' | 'reading_pages' | 'reading_readers') =>
    JSON.stringify(
      (await db.selectFrom(table).selectAll().where('document_id', '=', documentId).execute())
        .map((r) => JSON.stringify(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : String(v)])))
        .sort(),
    );
  return { totals: await rows('reading_totals'), pages: await rows('reading_pages'), readers: await rows('reading_readers') };
}

async function newVersion(documentId: string, pages: number) {
  const { payload, headers } = multipart({ bytes: pdf(pages), filename: 'brochure-v2.pdf' });
  return app.inject({ method: 'POST', url: `${DOCS}/${documentId}/versions`, headers: { ...(await who()).auth, ...headers }, payload });
}

const download = (url: string, opened: Opened) =>
  app.inject({ url: `${new URL(url).pathname}/file?download=1&session=${opened.sessionId}`, headers: { cookie: opened.cookie } });

describe('analytics from rollups', () => {
  it('answer what the sessions answer: totals, pages, versions, downloads and days in many time zones', async () => {
    at('2026-09-01T08:00:00Z');
    const doc = await newDocument(app, await who(), { bytes: pdf(4) });
    const open = await newLink(app, await who(), doc.id, { allow_download: true });
    const pinned = await newLink(app, await who(), doc.id, { version: 1 });
    const quiet = await newLink(app, await who(), doc.id);

    // Sessions on instants that are local midnights somewhere, or a millisecond before one.
    const starts = [
      '2026-09-05T23:59:59.999Z',
      '2026-09-06T03:59:59.999Z', // Santiago: the last instant before the clocks move at midnight
      '2026-09-06T04:00:00.000Z',
      '2026-10-24T21:59:59.999Z', // Berlin, the night summer time ends
      '2026-10-24T22:00:00.000Z',
      '2026-10-25T23:00:00.000Z',
      '2026-11-01T07:00:00.000Z', // Los Angeles, the day summer time ends
      '2026-11-02T08:00:00.000Z',
      '2026-11-23T18:15:00.000Z', // Kathmandu (+5:45)
      '2026-11-23T18:30:00.000Z', // Kolkata (+5:30)
      '2026-11-23T10:00:00.000Z', // Kiritimati (+14)
      '2026-11-24T11:00:00.000Z', // Pago Pago (−11)
    ];
    let returning: Opened | undefined;
    for (const [i, start] of starts.entries()) {
      at(start);
      const link = [open, pinned, open, quiet][i % 4]!;
      // Every third session is the same browser again.
      const opened = await openViewer(app, link.url, i % 3 === 2 && returning ? { cookie: returning.cookie } : {});
      returning ??= opened;
      at(new Date(clock.getTime() + 40_000).toISOString());
      // The time asked for is clamped to the 45 s passed: page 3 gets only what is left.
      const read = await beacon(app, opened, {
        pages: [
          { page: 1, views: 0, ms: 30_000 },
          { page: 2, views: 1, ms: 10_000 },
          { page: 3, views: 2, ms: 20_000 },
        ],
        ended: i % 2 === 0,
      });
      expect(read.statusCode, read.body).toBe(204);
      if (link === open && i % 3 === 0) expect((await download(link.url, opened)).statusCode).toBe(200);
    }

    // A session across midnight (UTC and Berlin), read on both days, then a second version.
    at('2026-11-22T22:50:00Z');
    const late = await openViewer(app, open.url, { cookie: returning!.cookie });
    at('2026-11-22T23:20:00Z');
    expect((await beacon(app, late, { pages: [{ page: 4, views: 1, ms: 25 * 60_000 }] })).statusCode).toBe(204);
    at('2026-11-23T00:10:00Z');
    expect((await beacon(app, late, { pages: [{ page: 4, views: 0, ms: 50 * 60_000 }], ended: true })).statusCode).toBe(204);
    expect((await download(open.url, late)).statusCode).toBe(200); // ended: the link counts it, the session not
    expect((await newVersion(doc.id, 6)).statusCode).toBe(201);
    at('2026-11-24T09:00:00Z');
    const v2 = await openViewer(app, open.url);
    at('2026-11-24T09:01:00Z');
    expect((await beacon(app, v2, { pages: [{ page: 6, views: 1, ms: 60_000 }] })).statusCode).toBe(204);
    expect((await download(open.url, v2)).statusCode).toBe(200);
    expect((await download(open.url, v2)).statusCode).toBe(200); // the session counts once, the link twice
    await openViewer(app, pinned.url); // pinned: still version 1
    // Readers who verified their phone count once per phone, whatever their cookie.
    const current = await app.platform.store.db.selectFrom('documents').selectAll().where('id', '=', doc.id).executeTakeFirstOrThrow();
    for (const cookie of ['rdr-cookie-one', 'rdr-cookie-two'])
      expect(await openSession(app.platform, quiet.id, current, cookie, undefined, '+4915112345678')).not.toBeNull();

    const links = [open.id, pinned.id, quiet.id];
    await expectSameAsSessions(doc.id, links, [1, 2]);
    const zones = [
      'UTC',
      'Europe/Berlin',
      'America/Los_Angeles',
      'America/Santiago',
      'Asia/Kolkata',
      'Asia/Kathmandu',
      'Pacific/Kiritimati',
      'Pacific/Pago_Pago',
      'Australia/Lord_Howe',
    ];
    for (const zone of zones) {
      for (const [column, id, base] of [['document_id', doc.id, DOCS], ...links.map((l) => ['link_id', l, LINKS])] as const) {
        const series = await get(`${base}/${id}/analytics/daily?time_zone=${zone}&from=2026-09-01&to=2026-11-30`);
        expect(series.days, `${id} in ${zone}`).toEqual(await oldDays(column, id, zone, '2026-09-01', '2026-11-30'));
      }
    }

    // The migration's backfill makes the rows the views kept up to date.
    const kept = await rollupRows(doc.id);
    // The document, the open and the quiet link: all versions, v1, v2; the pinned link: all, v1.
    expect(JSON.parse(kept.totals)).toHaveLength(3 * 3 + 2);
    await app.platform.store.db.transaction().execute(async (tx) => {
      for (const table of ['reading_readers', 'reading_pages', 'reading_totals'] as const)
        await tx.deleteFrom(table).where('document_id', '=', doc.id).execute();
      for (const statement of readingBackfill(`s.document_id = '${doc.id}'`)) await sql.raw(statement).execute(tx);
    });
    expect(await rollupRows(doc.id)).toEqual(kept);
  });

  it('views recorded at once on two links of one document all count', async () => {
    at('2026-11-25T12:00:00Z');
    const doc = await newDocument(app, await who(), { bytes: pdf(3) });
    const first = await newLink(app, await who(), doc.id);
    const second = await newLink(app, await who(), doc.id);
    const returning = await openViewer(app, first.url);
    const opened = await Promise.all(
      Array.from({ length: 12 }, (_, i) => openViewer(app, (i % 2 ? first : second).url, i % 3 === 0 ? { cookie: returning.cookie } : {})),
    );
    at('2026-11-25T12:00:30Z');
    const reads = await Promise.all(
      opened.map((o, i) =>
        beacon(app, o, {
          pages: [
            { page: 1, views: 1, ms: 1_000 * (i + 1) },
            { page: 2 + (i % 2), views: 1, ms: 500 },
          ],
        }),
      ),
    );
    expect(reads.map((r) => r.statusCode)).toEqual(opened.map(() => 204));
    await expectSameAsSessions(doc.id, [first.id, second.id], [1]);
    const totals = await get(`${DOCS}/${doc.id}/analytics`);
    expect(totals).toMatchObject({ views: 13, unique_readers: 1 + 8, total_time_ms: 78_000 + 12 * 500 });
  });
});
