// Completion: the distinct pages each reader saw over their sessions, as a share of the page
// count, per link and per document (a reader counted once across links), with the average; the
// reader is a pseudonym, never the cookie. Another workspace's id: 404.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { beacon, DOCS, LINKS, newDocument, newLink, openViewer, pdf, schemaErrors, tenant, type Tenant } from './support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app, 'completion-a');
  b = await tenant(app, 'completion-b');
});

describe('completion', () => {
  it('per reader and on average, for a link and for a document', async () => {
    const doc = await newDocument(app, a, { bytes: pdf(4) });
    const link = await newLink(app, a, doc.id);
    const other = await newLink(app, a, doc.id);
    const r1 = await openViewer(app, link.url); // page 1 is shown on opening
    expect((await beacon(app, r1, { pages: [{ page: 2, views: 1, ms: 0 }] })).statusCode).toBe(204);
    const again = await openViewer(app, link.url, { cookie: r1.cookie });
    expect((await beacon(app, again, { pages: [{ page: 3, views: 1, ms: 0 }] })).statusCode).toBe(204);
    await openViewer(app, other.url); // a second reader, page 1 only
    expect((await beacon(app, r1, { pages: [{ page: 2, views: 1, ms: 0 }] })).statusCode).toBe(204); // seen again: counts once

    const get = async (url: string) => {
      const res = await app.inject({ url: `${url}/analytics/completion`, headers: a.auth });
      expect(res.statusCode, res.body).toBe(200);
      expect(await schemaErrors('Completion', res.json())).toEqual([]);
      return res.json();
    };
    const ofLink = await get(`${LINKS}/${link.id}`);
    expect(ofLink).toMatchObject({ page_count: 4, average_completion: 0.75 });
    expect(ofLink.readers).toHaveLength(1);
    expect(ofLink.readers[0]).toMatchObject({ sessions: 2, pages_seen: 3, completion: 0.75 });
    const ofDocument = await get(`${DOCS}/${doc.id}`);
    expect(ofDocument.average_completion).toBe(0.5);
    expect(ofDocument.readers.map((r: { pages_seen: number }) => r.pages_seen).sort()).toEqual([1, 3]);
    const cookieValue = r1.cookie.split('=')[1]!;
    for (const r of ofDocument.readers) {
      expect(r.reader).toMatch(/^rdr_[0-9a-f]{16}$/);
      expect(r.reader).not.toContain(cookieValue);
    }
    expect(ofDocument.readers.find((r: { sessions: number }) => r.sessions === 2).reader).toBe(ofLink.readers[0].reader);
  });

  it('no readers: null average; another workspace’s link or document: 404', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const empty = await app.inject({ url: `${DOCS}/${doc.id}/analytics/completion`, headers: a.auth });
    expect(empty.json()).toEqual({ page_count: 3, average_completion: null, readers: [] });
    expect((await app.inject({ url: `${DOCS}/${doc.id}/analytics/completion`, headers: b.auth })).statusCode).toBe(404);
    expect((await app.inject({ url: `${LINKS}/${link.id}/analytics/completion`, headers: b.auth })).statusCode).toBe(404);
  });
});
