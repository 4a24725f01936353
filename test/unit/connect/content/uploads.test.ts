// The upload catalogue (bad-inputs I1–I8) and file names reaching headers (bad-inputs J5): every refusal leaves no
// row, no file and no outbox entry; accepted names are sanitised and served with RFC 6266.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { MAX_UPLOAD_BYTES } from '#server/plugins/body-parsers.js';
import { buildShared } from '#test/helper.js';
import { DOCS, multipart, newDocument, newLink, office, PNG, PROBLEM, pdf, snapshot, tenant, upload, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect uploads: the I and J5 catalogue', () => {
  let app: FastifyInstance;
  let a: Tenant;
  beforeAll(async () => {
    app = await buildShared();
    a = await tenant(app, 'uploads-a');
  });

  async function refused(file: Parameters<typeof upload>[2], status: number, type: string) {
    const before = await snapshot(app);
    const res = await upload(app, a, file);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().type).toBe(`${PROBLEM}${type}`);
    expect(await snapshot(app)).toEqual(before);
    return res.json();
  }

  it('I1 declared application/pdf, content PNG: 415 naming image/png; nothing stored', async () => {
    const problem = await refused({ bytes: PNG, type: 'application/pdf' }, 415, 'unsupported-media-type');
    expect(problem.detail).toContain('image/png');
  });

  it('I1 declared application/pdf, content HTML: 415 naming text/html', async () => {
    const problem = await refused(
      { bytes: Buffer.from('<!doctype html><html><script>alert(1)</script></html>'), type: 'application/pdf' },
      415,
      'unsupported-media-type',
    );
    expect(problem.detail).toContain('text/html');
  });

  it('I1 declared application/pdf, content a Windows executable (MZ): 415 naming it', async () => {
    const exe = Buffer.alloc(512);
    exe.write('MZ', 0);
    exe.writeUInt32LE(0x80, 0x3c);
    exe.write('PE\0\0', 0x80, 'latin1');
    const problem = await refused({ bytes: exe, type: 'application/pdf' }, 415, 'unsupported-media-type');
    expect(problem.detail).not.toContain('application/pdf but its content is application/pdf');
    expect(problem.detail).toMatch(/content is (application\/x-msdownload|application\/octet-stream)/);
  });

  it("I1 declared */* (the file part's encoding in the documents): typed by content, PNG stored as image/png", async () => {
    const doc = await newDocument(app, a, { bytes: PNG, filename: 'photo.png', type: '*/*' });
    expect(doc.content_type).toBe('image/png');
  });

  it('I1 declared */*, content HTML: 415 naming text/html', async () => {
    const problem = await refused({ bytes: Buffer.from('<!doctype html><html><body>hi</body></html>'), type: '*/*' }, 415, 'unsupported-media-type');
    expect(problem.detail).toContain('text/html');
  });

  it('I1 SVG declared as an image: 415 naming image/svg+xml', async () => {
    const svg = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>');
    const problem = await refused({ bytes: svg, type: 'image/png', filename: 'logo.png' }, 415, 'unsupported-media-type');
    expect(problem.detail).toContain('image/svg+xml');
    await refused({ bytes: svg, type: 'image/svg+xml', filename: 'logo.svg' }, 415, 'unsupported-media-type');
  });

  it('I1 HTML declared as an image: 415 naming text/html', async () => {
    const problem = await refused({ bytes: Buffer.from('<html><body onload=alert(1)>'), type: 'image/jpeg', filename: 'a.jpg' }, 415, 'unsupported-media-type');
    expect(problem.detail).toContain('text/html');
  });

  it('I2 polyglot (%PDF- header, then HTML): stored as PDF, served as application/pdf with nosniff and CSP sandbox', async () => {
    const polyglot = Buffer.from('%PDF-1.4\n<html><body><script>alert(document.domain)</script></body></html>\n');
    const doc = await newDocument(app, a, { bytes: polyglot, filename: 'poly.html' });
    expect(doc).toMatchObject({ content_type: 'application/pdf', page_count: null, filename: 'poly.html.pdf' });
    const link = await newLink(app, a, doc.id, { allow_download: true });
    for (const query of ['', '?download=1']) {
      const res = await app.inject({ url: `${new URL(link.url).pathname}/file${query}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/pdf');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toMatch(/^sandbox(;|$)/);
      expect(res.rawPayload.equals(polyglot)).toBe(true);
    }
  });

  it('I3 one byte over the cap: 413 payload-too-large; no row, no partial file', async () => {
    const big = Buffer.alloc(MAX_UPLOAD_BYTES + 1, 0x20);
    pdf(1).copy(big);
    await refused({ bytes: big }, 413, 'payload-too-large');
  });

  it('I3 exactly at the cap: accepted', async () => {
    const full = Buffer.alloc(MAX_UPLOAD_BYTES, 0x20);
    pdf(1).copy(full);
    const doc = await newDocument(app, a, { bytes: full });
    expect(doc.size_bytes).toBe(MAX_UPLOAD_BYTES);
  });

  it('I4 office file inflating to 1 GB (16 entries of 64 MiB zeros): 422, nothing inflated or stored', async () => {
    const zeros = Buffer.alloc(64 * 1024 * 1024);
    const entries = Array.from({ length: 16 }, (_, i) => ({ name: `word/media/image${i}.bin`, data: zeros, deflate: true }));
    const bomb = office('docx', entries);
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const problem = await refused({ bytes: bomb, filename: 'bomb.docx', type: 'application/octet-stream' }, 422, 'unprocessable');
    expect(problem.detail).toMatch(/zip bomb|inflate/);
  });

  it('I4 office file of 100,000 entries (zip64): 422, nothing stored', async () => {
    const entries = Array.from({ length: 100_000 }, (_, i) => ({ name: `xl/e${i}` }));
    const problem = await refused({ bytes: office('xlsx', entries), filename: 'many.xlsx', type: 'application/octet-stream' }, 422, 'unprocessable');
    expect(problem.detail).toContain('100002 entries');
  });

  it('I5 hostile file names: stored under a generated name; name sanitised; served with filename*', async () => {
    const cases: [string, string][] = [
      ['../../etc/passwd', 'passwd.pdf'],
      ['..\\..\\x.pdf', 'x.pdf'],
      ['/abs.pdf', 'abs.pdf'],
      ['a%00.pdf', 'a%00.pdf'],
      ['invoice\u202Efdp.exe', 'invoicefdp.exe.pdf'],
      [`${'x'.repeat(1000)}.pdf`, `${'x'.repeat(251)}.pdf`],
    ];
    for (const [given, expected] of cases) {
      const doc = await newDocument(app, a, { filename: given });
      expect(doc.filename, given).toBe(expected);
      const row = await app.platform.store.db.selectFrom('documents').select('storage_key').where('id', '=', doc.id).executeTakeFirstOrThrow();
      expect(row.storage_key).toMatch(/^[0-9A-Za-z]{32}$/);
      const link = await newLink(app, a, doc.id, { allow_download: true });
      const res = await app.inject({ url: `${new URL(link.url).pathname}/file?download=1` });
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/);
    }
  });

  it('I5 a NUL byte in the file name is removed', async () => {
    const doc = await newDocument(app, a, { filename: 'a\u0000b.pdf' });
    expect(doc.filename).toBe('ab.pdf');
  });

  it('J5 CR/LF in the file name: no header split; the name is served encoded', async () => {
    const doc = await newDocument(app, a, { filename: 'a\r\nSet-Cookie: x=1.pdf' });
    expect(doc.filename).not.toMatch(/[\r\n]/);
    const link = await newLink(app, a, doc.id, { allow_download: true });
    const res = await app.inject({ url: `${new URL(link.url).pathname}/file?download=1` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['content-disposition']).not.toMatch(/[\r\n]/);
  });

  it('I6 more than one file part: 413; nothing stored', async () => {
    const before = await snapshot(app);
    const boundary = 'XbOuNdArY';
    const part = (n: number) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f${n}.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n`;
    const payload = `${Array.from({ length: 1000 }, (_, i) => part(i)).join('')}--${boundary}--\r\n`;
    const res = await app.inject({ method: 'POST', url: DOCS, headers: { ...a.auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
    expect(res.statusCode).toBe(413);
    expect(await snapshot(app)).toEqual(before);
  });

  it('I6 10,000 fields, or a 10 MB field: 413 or 400; nothing stored', async () => {
    const before = await snapshot(app);
    const fields = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, 'x']));
    const many = multipart({ bytes: pdf(1), fields });
    const res = await app.inject({ method: 'POST', url: DOCS, headers: { ...a.auth, ...many.headers }, payload: many.payload });
    expect([400, 413]).toContain(res.statusCode);
    const huge = multipart({ bytes: pdf(1), title: 'x'.repeat(10 * 1024 * 1024) });
    const res2 = await app.inject({ method: 'POST', url: DOCS, headers: { ...a.auth, ...huge.headers }, payload: huge.payload });
    expect([400, 413]).toContain(res2.statusCode);
    expect(await snapshot(app)).toEqual(before);
  });

  it('I6 an unknown text part: 400 naming it', async () => {
    const before = await snapshot(app);
    const body = multipart({ bytes: pdf(1), fields: { org_id: 'ws_x' } });
    const res = await app.inject({ method: 'POST', url: DOCS, headers: { ...a.auth, ...body.headers }, payload: body.payload });
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(res.json().errors)).toContain('/body/org_id');
    expect(await snapshot(app)).toEqual(before);
  });

  it('I7 no boundary, a wrong boundary, a body cut short: 400; nothing stored', async () => {
    const before = await snapshot(app);
    const good = multipart({ bytes: pdf(1) });
    const noBoundary = await app.inject({ method: 'POST', url: DOCS, headers: { ...a.auth, 'content-type': 'multipart/form-data' }, payload: good.payload });
    expect([400, 415]).toContain(noBoundary.statusCode);
    const wrong = await app.inject({
      method: 'POST',
      url: DOCS,
      headers: { ...a.auth, 'content-type': 'multipart/form-data; boundary=nope' },
      payload: good.payload,
    });
    expect(wrong.statusCode).toBe(400);
    const cut = await app.inject({
      method: 'POST',
      url: DOCS,
      headers: { ...a.auth, ...good.headers },
      payload: good.payload.subarray(0, good.payload.length - 40),
    });
    expect(cut.statusCode).toBe(400);
    expect(await snapshot(app)).toEqual(before);
  });

  it('I8 an empty file: 400 naming /body/file; nothing stored', async () => {
    const problem = await refused({ bytes: Buffer.alloc(0) }, 400, 'validation');
    expect(problem.errors[0].pointer).toBe('/body/file');
  });

  it('I8 JSON sent to the upload operation: 415', async () => {
    const before = await snapshot(app);
    const res = await app.inject({ method: 'POST', url: DOCS, headers: a.auth, payload: { file: 'JVBERi0=' } });
    expect(res.statusCode).toBe(415);
    expect(res.json().type).toBe(`${PROBLEM}unsupported-media-type`);
    expect(await snapshot(app)).toEqual(before);
  });

  it('a title that is blank or over 200 characters: 400 naming /body/title', async () => {
    for (const title of ['   ', 'x'.repeat(201)]) {
      const problem = await refused({ title }, 400, 'validation');
      expect(JSON.stringify(problem.errors)).toContain('/body/title');
    }
  });
});
