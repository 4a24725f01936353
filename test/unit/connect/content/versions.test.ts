// Document versions: a new file for the same document, every link keeping its URL; links follow
// the newest version or stay pinned to one; sessions record the version they were shown, so
// analytics can be read per version; `document.updated` is sent. Bad inputs: an unknown version
// to pin or to filter analytics by (400), another workspace's document (404), nothing changed.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import {
  beacon,
  DOCS,
  LINKS,
  multipart,
  newDocument,
  newLink,
  openViewer,
  outboxEvents,
  pdf,
  schemaErrors,
  slugOf,
  snapshot,
  storedFiles,
  tenant,
  webhookEndpoint,
  type Tenant,
} from './support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app, 'versions-a');
  b = await tenant(app, 'versions-b');
});

function newVersion(who: Tenant, documentId: string, bytes: Buffer, filename = 'brochure-v2.pdf') {
  const { payload, headers } = multipart({ bytes, filename });
  return app.inject({ method: 'POST', url: `${DOCS}/${documentId}/versions`, headers: { ...who.auth, ...headers }, payload });
}

/** The bytes the viewer serves for a link. */
async function served(url: string): Promise<Buffer> {
  const res = await app.inject({ url: `/l/${slugOf(url)}/file` });
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}

describe('document versions', () => {
  it('a new version replaces the file behind every following link; a pinned link keeps its version', async () => {
    const hook = await webhookEndpoint(app, a.workspaceId);
    await app.platform.store.db
      .updateTable('webhook_endpoints')
      .set({ event_types: ['*'] })
      .where('id', '=', hook)
      .execute();
    const v1 = pdf(3);
    const v2 = pdf(5);
    const doc = await newDocument(app, a, { bytes: v1 });
    expect(doc.version).toBe(1);
    const follows = await newLink(app, a, doc.id);
    const pinned = await newLink(app, a, doc.id, { version: 1 });
    expect(follows.version).toBeNull();
    expect(pinned.version).toBe(1);

    const res = await newVersion(a, doc.id, v2);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ version: 2, filename: 'brochure-v2.pdf', page_count: 5, current: true, size_bytes: v2.length });
    expect(await schemaErrors('DocumentVersion', res.json())).toEqual([]);

    const current = (await app.inject({ url: `${DOCS}/${doc.id}`, headers: a.auth })).json();
    expect(current).toMatchObject({ id: doc.id, version: 2, page_count: 5, filename: 'brochure-v2.pdf' });
    expect((await served(follows.url)).equals(v2)).toBe(true);
    expect((await served(pinned.url)).equals(v1)).toBe(true);

    const list = await app.inject({ url: `${DOCS}/${doc.id}/versions`, headers: a.auth });
    expect(list.json().data.map((v: { version: number; current: boolean }) => [v.version, v.current])).toEqual([
      [2, true],
      [1, false],
    ]);

    const [event] = await outboxEvents(app, a.workspaceId, 'document.updated');
    expect(event).toMatchObject({
      type: 'document.updated',
      data: { document: { id: doc.id, page_count: 5 }, version: { version: 2, page_count: 5, filename: 'brochure-v2.pdf' }, previous_version: 1 },
    });
    expect(await schemaErrors('DocumentUpdatedData', event.data)).toEqual([]);
  });

  it('analytics per version: sessions count under the version they were shown', async () => {
    const doc = await newDocument(app, a, { bytes: pdf(2) });
    const link = await newLink(app, a, doc.id);
    const first = await openViewer(app, link.url);
    expect((await beacon(app, first, { pages: [{ page: 2, views: 1, ms: 0 }] })).statusCode).toBeLessThan(300);
    expect((await newVersion(a, doc.id, pdf(4))).statusCode).toBe(201);
    const second = await openViewer(app, link.url);
    // Page 4 exists in version 2 only: the beacon of a version-2 session may report it.
    expect((await beacon(app, second, { pages: [{ page: 4, views: 1, ms: 0 }] })).statusCode).toBeLessThan(300);
    expect((await beacon(app, first, { pages: [{ page: 4, views: 1, ms: 0 }] })).statusCode).toBe(400);

    const at = (version?: number, url = `${DOCS}/${doc.id}/analytics`) =>
      app.inject({ url: version ? `${url}?version=${version}` : url, headers: a.auth }).then((r) => r.json());
    expect((await at()).views).toBe(2);
    expect((await at(1)).views).toBe(1);
    expect((await at(2)).views).toBe(1);
    expect((await at(2)).pages.map((p: { page: number }) => p.page)).toEqual([1, 4]);
    expect((await at(1, `${LINKS}/${link.id}/analytics`)).views).toBe(1);
  });

  it('bad inputs: an unknown version to pin or filter by is 400; another workspace’s document 404; nothing changed', async () => {
    const doc = await newDocument(app, a);
    const before = await snapshot(app);
    const pin = await app.inject({
      method: 'POST',
      url: LINKS,
      headers: a.auth,
      payload: { document_id: doc.id, external_id: 'crm-bad-version', recipient: { phone: '+4915112345678' }, version: 2 },
    });
    expect(pin.statusCode).toBe(400);
    expect(pin.json().errors).toEqual([{ pointer: '/body/version', detail: 'is not a version of this document' }]);
    const zero = await app.inject({
      method: 'POST',
      url: LINKS,
      headers: a.auth,
      payload: { document_id: doc.id, external_id: 'crm-bad-version', recipient: { phone: '+4915112345678' }, version: 0 },
    });
    expect(zero.statusCode).toBe(400);
    for (const query of ['version=7', 'version=0', 'version=x']) {
      const res = await app.inject({ url: `${DOCS}/${doc.id}/analytics?${query}`, headers: a.auth });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().errors[0].pointer).toBe('/query/version');
    }
    expect((await newVersion(b, doc.id, pdf(1))).statusCode).toBe(404);
    expect((await app.inject({ url: `${DOCS}/${doc.id}/versions`, headers: b.auth })).statusCode).toBe(404);
    const notPdf = await newVersion(a, doc.id, Buffer.from('<html>not a pdf</html>'));
    expect(notPdf.statusCode).toBe(415);
    expect(await snapshot(app)).toEqual(before);
  });

  it('deleting a document removes every version’s file', async () => {
    const doc = await newDocument(app, a, { bytes: pdf(1) });
    expect((await newVersion(a, doc.id, pdf(2))).statusCode).toBe(201);
    const keys = (await app.platform.store.db.selectFrom('document_versions').select('storage_key').where('document_id', '=', doc.id).execute()).map(
      (r) => r.storage_key,
    );
    expect(keys).toHaveLength(2);
    expect((await app.inject({ method: 'DELETE', url: `${DOCS}/${doc.id}`, headers: a.auth })).statusCode).toBe(204);
    for (const key of keys) expect(storedFiles(app)).not.toContain(key);
  });
});
