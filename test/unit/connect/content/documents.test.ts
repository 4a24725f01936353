// Documents over the Connect API: upload (types by content, names, page counts), list with
// cursors, get, delete (file removed, links revoked and answering 410), scopes and isolation.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { DOCS, LINKS, multipart, newDocument, newLink, office, PNG, PROBLEM, pdf, storedFiles, tenant, upload, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect documents', () => {
  let app: FastifyInstance;
  let a: Tenant;
  let b: Tenant;
  beforeAll(async () => {
    app = await buildShared();
    a = await tenant(app, 'docs-a');
    b = await tenant(app, 'docs-b');
  });

  it('upload: 201 with the detected type, size, sha256 and the PDF page count from pdf.js', async () => {
    const bytes = pdf(5);
    const res = await upload(app, a, { bytes, filename: 'Lisbon city break.pdf', title: 'Lisbon 2027' });
    expect(res.statusCode, res.body).toBe(201);
    const doc = res.json();
    expect(doc).toMatchObject({
      title: 'Lisbon 2027',
      filename: 'Lisbon city break.pdf',
      content_type: 'application/pdf',
      size_bytes: bytes.length,
      page_count: 5,
    });
    expect(doc.id).toMatch(/^doc_[0-9A-Za-z]{20}$/);
    expect(doc.sha256).toBe((await import('node:crypto')).createHash('sha256').update(bytes).digest('hex'));
    const row = await app.platform.store.db.selectFrom('documents').selectAll().where('id', '=', doc.id).executeTakeFirstOrThrow();
    expect(row.storage_key).toMatch(/^[0-9A-Za-z]{32}$/);
    expect(existsSync(join(app.config.dataDir, 'documents', row.storage_key))).toBe(true);
  });

  it('upload: the title defaults to the file name without extension; images count one page', async () => {
    const doc = await newDocument(app, a, { bytes: PNG, filename: 'map of Lisbon.png', type: 'image/png' });
    expect(doc).toMatchObject({ title: 'map of Lisbon', content_type: 'image/png', page_count: 1 });
  });

  it('upload: office zips are detected as DOCX, XLSX and PPTX (slides counted), declared octet-stream accepted', async () => {
    const docx = await newDocument(app, a, {
      bytes: office('docx'),
      filename: 'offer.docx',
      type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    expect(docx).toMatchObject({ content_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', page_count: null });
    const xlsx = await newDocument(app, a, { bytes: office('xlsx'), filename: 'prices.xlsx', type: 'application/octet-stream' });
    expect(xlsx.content_type).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const slides = [1, 2, 3].map((n) => ({ name: `ppt/slides/slide${n}.xml`, data: Buffer.from('<p:sld/>') }));
    const pptx = await newDocument(app, a, {
      bytes: office('pptx', slides),
      filename: 'deck.pptx',
      type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    });
    expect(pptx).toMatchObject({ content_type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', page_count: 3 });
  });

  it('upload without documents:write: 403 naming the scope, nothing stored', async () => {
    const reader = await tenant(app, 'docs-reader', ['analytics:read']);
    const before = storedFiles(app);
    const res = await upload(app, reader);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ type: `${PROBLEM}forbidden`, required_scope: 'documents:write' });
    expect(storedFiles(app)).toEqual(before);
  });

  it('upload without a bearer: 401 problem with WWW-Authenticate', async () => {
    const res = await app.inject({ method: 'POST', url: DOCS, ...multipart({ bytes: pdf() }) });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBeTruthy();
  });

  it('list: newest first, paginated with a signed cursor, only the caller workspace', async () => {
    const c = await tenant(app, 'docs-list');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await newDocument(app, c, { title: `Doc ${i}` })).id);
    await newDocument(app, b);
    const first = await app.inject({ url: `${DOCS}?limit=2`, headers: c.auth });
    expect(first.statusCode).toBe(200);
    const page1 = first.json();
    expect(page1.data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(page1.has_more).toBe(true);
    const second = await app.inject({ url: `${DOCS}?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, headers: c.auth });
    expect(second.json()).toMatchObject({ data: [{ id: ids[0] }], has_more: false, next_cursor: null });
  });

  it('B6 list with another workspace cursor, or an edited one: 400 validation', async () => {
    for (let i = 0; i < 2; i++) await newDocument(app, b);
    const page = (await app.inject({ url: `${DOCS}?limit=1`, headers: b.auth })).json();
    const foreign = await app.inject({ url: `${DOCS}?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`, headers: a.auth });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().errors[0].pointer).toBe('/query/cursor');
    const edited = await app.inject({ url: `${DOCS}?cursor=${encodeURIComponent(`x${page.next_cursor}`)}`, headers: b.auth });
    expect(edited.statusCode).toBe(400);
  });

  it('get: the document; unknown id 404', async () => {
    const doc = await newDocument(app, a);
    const res = await app.inject({ url: `${DOCS}/${doc.id}`, headers: a.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(doc);
    const missing = await app.inject({ url: `${DOCS}/doc_0000000000000000`, headers: a.auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().type).toBe(`${PROBLEM}not-found`);
  });

  it('B1 another workspace document id: get, delete, analytics and links filter answer the same 404 as an unknown id', async () => {
    const doc = await newDocument(app, a);
    const unknown = await app.inject({ url: `${DOCS}/doc_0000000000000000`, headers: b.auth });
    const strip = (body: Record<string, unknown>) => ({ ...body, instance: undefined, request_id: undefined });
    for (const [method, url] of [
      ['GET', `${DOCS}/${doc.id}`],
      ['DELETE', `${DOCS}/${doc.id}`],
      ['GET', `${DOCS}/${doc.id}/analytics`],
      ['GET', `${LINKS}?document_id=${doc.id}`],
    ] as const) {
      const res = await app.inject({ method, url, headers: b.auth });
      expect(res.statusCode, url).toBe(404);
      expect(strip(res.json())).toEqual(strip(unknown.json()));
    }
    const create = await app.inject({
      method: 'POST',
      url: LINKS,
      headers: b.auth,
      payload: { document_id: doc.id, external_id: 'x', recipient: { email: 'x@example.com' } },
    });
    expect(create.statusCode).toBe(404);
    expect((await app.inject({ url: `${DOCS}/${doc.id}`, headers: a.auth })).statusCode).toBe(200);
  });

  it('B8 malformed ids (abc, 500 characters, %00): 400 or 404, never 500', async () => {
    for (const id of ['abc', `doc_${'x'.repeat(496)}`, 'doc_%00abc']) {
      const res = await app.inject({ url: `${DOCS}/${id}`, headers: a.auth });
      expect([400, 404], id).toContain(res.statusCode);
    }
  });

  it('delete: 204, the file removed, gone from get and list; its active links revoked and answering 410', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const row = await app.platform.store.db.selectFrom('documents').select('storage_key').where('id', '=', doc.id).executeTakeFirstOrThrow();
    const res = await app.inject({ method: 'DELETE', url: `${DOCS}/${doc.id}`, headers: a.auth });
    expect(res.statusCode).toBe(204);
    expect(existsSync(join(app.config.dataDir, 'documents', row.storage_key))).toBe(false);
    expect((await app.inject({ url: `${DOCS}/${doc.id}`, headers: a.auth })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `${DOCS}/${doc.id}`, headers: a.auth })).statusCode).toBe(404);
    const listed = (await app.inject({ url: `${DOCS}?limit=100`, headers: a.auth })).json();
    expect(listed.data.map((d: { id: string }) => d.id)).not.toContain(doc.id);
    const got = (await app.inject({ url: `${LINKS}/${link.id}`, headers: a.auth })).json();
    expect(got).toMatchObject({ status: 'revoked' });
    const viewer = await app.inject({ url: new URL(link.url).pathname });
    expect(viewer.statusCode).toBe(410);
    const file = await app.inject({ url: `${new URL(link.url).pathname}/file` });
    expect(file.statusCode).toBe(410);
    // analytics of the link stay readable
    expect((await app.inject({ url: `${LINKS}/${link.id}/analytics`, headers: a.auth })).statusCode).toBe(200);
  });
});
