// Analytics count real reading: sessions opened through the viewer, pages and time from its
// beacons, downloads, distinct reader cookies; per link, per document, and the session list.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { beacon, DOCS, LINKS, newDocument, newLink, openViewer, schemaErrors, tenant, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect analytics', () => {
  let app: FastifyInstance;
  let a: Tenant;
  let clock = new Date('2026-11-23T14:00:00Z');
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  beforeAll(async () => {
    app = await buildShared({ overrides: { now: () => clock } });
    a = await tenant(app, 'analytics-a');
  });

  it('a link never opened: zeros and nulls', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const res = await app.inject({ url: `${LINKS}/${link.id}/analytics`, headers: a.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      link_id: link.id,
      document_id: doc.id,
      external_id: link.external_id,
      views: 0,
      unique_readers: 0,
      downloads: 0,
      total_time_ms: 0,
      pages: [],
      first_opened_at: null,
      last_opened_at: null,
    });
  });

  it('views, unique readers, time per page, openings and downloads from real viewer activity', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id, { allow_download: true });
    const other = await newLink(app, a, doc.id);

    // Reader 1 opens twice (same cookie), reads pages 1–2, downloads once.
    const firstOpen = clock.toISOString();
    const r1 = await openViewer(app, link.url);
    advance(20_000);
    expect(
      (
        await beacon(app, r1, {
          pages: [
            { page: 1, views: 0, ms: 15_000 },
            { page: 2, views: 1, ms: 5_000 },
          ],
        })
      ).statusCode,
    ).toBe(204);
    await app.inject({ url: `${new URL(link.url).pathname}/file?download=1&session=${r1.sessionId}`, headers: { cookie: r1.cookie } });
    advance(60_000);
    const r1again = await openViewer(app, link.url, { cookie: r1.cookie });
    advance(10_000);
    expect((await beacon(app, r1again, { pages: [{ page: 1, views: 0, ms: 10_000 }], ended: true })).statusCode).toBe(204);
    // Reader 2 (no cookie) on the same link: page 3.
    advance(1_000);
    const lastOpen = clock.toISOString();
    const r2 = await openViewer(app, link.url);
    advance(7_000);
    expect((await beacon(app, r2, { pages: [{ page: 3, views: 1, ms: 7_000 }] })).statusCode).toBe(204);
    // Reader 3 on the other link.
    advance(1_000);
    const r3 = await openViewer(app, other.url);
    advance(3_000);
    expect((await beacon(app, r3, { pages: [{ page: 1, views: 0, ms: 3_000 }] })).statusCode).toBe(204);

    const linkStats = (await app.inject({ url: `${LINKS}/${link.id}/analytics`, headers: a.auth })).json();
    expect(await schemaErrors('LinkAnalytics', linkStats)).toEqual([]);
    expect(linkStats).toEqual({
      link_id: link.id,
      document_id: doc.id,
      external_id: link.external_id,
      views: 3,
      unique_readers: 2,
      downloads: 1,
      total_time_ms: 37_000,
      pages: [
        { page: 1, views: 3, time_ms: 25_000 },
        { page: 2, views: 1, time_ms: 5_000 },
        { page: 3, views: 1, time_ms: 7_000 },
      ],
      first_opened_at: firstOpen,
      last_opened_at: lastOpen,
    });
    const docStats = (await app.inject({ url: `${DOCS}/${doc.id}/analytics`, headers: a.auth })).json();
    expect(await schemaErrors('DocumentAnalytics', docStats)).toEqual([]);
    expect(docStats).toMatchObject({ document_id: doc.id, links: 2, views: 4, unique_readers: 3, downloads: 1, total_time_ms: 40_000 });
    expect(docStats.pages[0]).toEqual({ page: 1, views: 4, time_ms: 28_000 });
    const got = (await app.inject({ url: `${LINKS}/${link.id}`, headers: a.auth })).json();
    expect(got.last_opened_at).toBe(lastOpen);

    // The sessions of the link, newest first, two pages.
    const page1 = (await app.inject({ url: `${LINKS}/${link.id}/sessions?limit=2`, headers: a.auth })).json();
    expect(page1.data.map((s: { id: string }) => s.id)).toEqual([r2.sessionId, r1again.sessionId]);
    expect(page1.has_more).toBe(true);
    for (const s of page1.data) expect(await schemaErrors('ReaderSession', s)).toEqual([]);
    expect(page1.data[1]).toMatchObject({
      device: 'desktop',
      duration_ms: 10_000,
      ended_at: expect.any(String),
      pages_viewed: 1,
      page_count: 3,
      downloaded: false,
    });
    const page2 = (await app.inject({ url: `${LINKS}/${link.id}/sessions?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, headers: a.auth })).json();
    expect(page2).toMatchObject({ has_more: false, next_cursor: null });
    expect(page2.data[0]).toMatchObject({ id: r1.sessionId, duration_ms: 20_000, pages_viewed: 2, downloaded: true, ended_at: null });
    // A cursor of this list is refused on another link's list.
    const foreign = await app.inject({ url: `${LINKS}/${other.id}/sessions?cursor=${encodeURIComponent(page1.next_cursor)}`, headers: a.auth });
    expect(foreign.statusCode).toBe(400);
  });

  it('A7 a token with only documents:write reading analytics: 403 naming analytics:read', async () => {
    const docsOnly = await tenant(app, 'analytics-docs', ['documents:write']);
    const doc = await newDocument(app, docsOnly);
    const res = await app.inject({ url: `${DOCS}/${doc.id}/analytics`, headers: docsOnly.auth });
    expect(res.statusCode).toBe(403);
    expect(res.json().required_scope).toBe('analytics:read');
  });

  it('H10 a random cursor on the sessions list: 400', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const res = await app.inject({ url: `${LINKS}/${link.id}/sessions?cursor=not-a-cursor`, headers: a.auth });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/query/cursor');
  });
});
