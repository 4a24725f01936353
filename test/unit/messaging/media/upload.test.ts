// POST /api/chatapp/media against the sandbox: the answer and the row of an accepted upload, and
// every refusal (400, 404, 413, 415) leaving no row (bad-inputs I1, I3, I6, I7, I8, H2, H3, B1).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { PROBLEMS, tenant, type Tenant } from '../inbox/support.js';
import { FILES, multipart, type FilePartSpec } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
  b = await tenant(app);
}, 240_000);

const png: FilePartSpec = { filename: 'card-1.png', type: 'image/png', bytes: FILES.png() };
const upload = (t: Tenant, fields: Record<string, string>, files: FilePartSpec[]) => {
  const { payload, headers } = multipart(fields, files);
  return app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { ...t.headers, ...headers }, payload });
};
const raw = (t: Tenant, payload: Buffer | string, contentType: string) =>
  app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { ...t.headers, 'content-type': contentType }, payload });
const rows = async (t: Tenant) =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('uploaded_media')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

async function refused(res: Awaited<ReturnType<typeof upload>>, status: number, type: string, before: number, t = a) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().type).toBe(`${PROBLEMS}${type}`);
  expect(await rows(t)).toBe(before);
  return res.json();
}

describe('uploadMedia', () => {
  it('a PNG for a sandbox number: 201 with our id, the provider id, type, size, digest, expiry in 30 days; a row', async () => {
    const res = await upload(a, { chatapp_phone_number: a.number }, [png]);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ chatapp_phone_number: a.number, mime_type: 'image/png', filename: 'card-1.png', size_bytes: 256 });
    expect(body.id).toMatch(/^med_/);
    expect(body.provider_media_id).toMatch(/^\d{15}$/);
    expect(body.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(30 * 24 * 3600 * 1000);
    const row = await app.platform.store.db.selectFrom('uploaded_media').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ workspace_id: a.workspaceId, phone_number_id: a.pnId, provider_media_id: body.provider_media_id, sha256: body.sha256 });
  });

  it("the sender by our pn_ id, as the docs say (and as send and campaigns take it); another workspace's pn_ id: 404", async () => {
    const res = await upload(a, { chatapp_phone_number: a.pnId }, [png]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().chatapp_phone_number).toBe(a.number);
    const before = await rows(a);
    await refused(await upload(a, { chatapp_phone_number: b.pnId }, [png]), 404, 'not-found', before);
  });

  it('the sender in any layout; the kind follows from the bytes (a PDF declared octet-stream)', async () => {
    const spaced = `${a.number.slice(0, 2)} (${a.number.slice(2, 5)}) ${a.number.slice(5)}`;
    const res = await upload(a, { chatapp_phone_number: spaced }, [{ filename: 'spec sheet', type: 'application/octet-stream', bytes: FILES.pdf() }]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ mime_type: 'application/pdf', filename: 'spec sheet.pdf', chatapp_phone_number: a.number });
  });

  it('I1 declared image/png, bytes PDF: 415 naming both; no row', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number }, [{ ...png, bytes: FILES.pdf() }]), 415, 'unsupported-media-type', before);
    expect(p.detail).toBe('file is declared image/png but its bytes are application/pdf.');
    expect(p.errors[0].pointer).toBe('/body/file');
  });

  it('I1 HTML declared as an image: 415', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number }, [{ ...png, bytes: FILES.html() }]), 415, 'unsupported-media-type', before);
    expect(p.detail).toContain('text/html');
  });

  it('I3 an image one byte over 5 MB: 413; no row', async () => {
    const before = await rows(a);
    const p = await refused(
      await upload(a, { chatapp_phone_number: a.number }, [{ ...png, bytes: FILES.png(5 * 1024 * 1024 + 1) }]),
      413,
      'payload-too-large',
      before,
    );
    expect(p.detail).toContain('Images may be up to 5 MB');
  });

  it('I8 an empty file: 400', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number }, [{ ...png, bytes: Buffer.alloc(0) }]), 400, 'validation', before);
    expect(p.errors).toEqual([{ pointer: '/body/file', detail: 'is empty' }]);
  });

  it('H2 no file part: 400 naming file', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number }, []), 400, 'validation', before);
    expect(JSON.stringify(p.errors)).toContain('file');
  });

  it('H2 file sent as a text field: 400', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number, file: 'not a file' }, []), 400, 'validation', before);
    expect(p.errors).toEqual([{ pointer: '/body/file', detail: 'must be a file part (with a filename)' }]);
  });

  it('H2 no sender: 400 naming chatapp_phone_number', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, {}, [png]), 400, 'validation', before);
    expect(JSON.stringify(p.errors)).toContain('chatapp_phone_number');
  });

  it('I6 two files: 400, one file only', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: a.number }, [png, { ...png, filename: 'card-2.png' }]), 400, 'validation', before);
    expect(p.errors).toEqual([{ pointer: '/body/file', detail: 'only one file is accepted' }]);
  });

  it('I6 many fields: 400 from the form limits (a form the schema does not allow, not a size)', async () => {
    const before = await rows(a);
    const fields = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, 'x']));
    await refused(await upload(a, { chatapp_phone_number: a.number, ...fields }, [png]), 400, 'validation', before);
  });

  it('H3 an unknown part: 400 naming it', async () => {
    const before = await rows(a);
    const res = await upload(a, { chatapp_phone_number: a.number, isAdmin: 'true' }, [png]);
    const p = await refused(res, 400, 'validation', before);
    expect(JSON.stringify(p.errors)).toContain('isAdmin');
  });

  it('I7 a wrong boundary: 400 malformed-body', async () => {
    const before = await rows(a);
    const { payload } = multipart({ chatapp_phone_number: a.number }, [png]);
    await refused(await raw(a, payload, 'multipart/form-data; boundary=not-the-one'), 400, 'malformed-body', before);
  });

  it('I7 no boundary at all: 400', async () => {
    const before = await rows(a);
    const { payload } = multipart({ chatapp_phone_number: a.number }, [png]);
    const res = await raw(a, payload, 'multipart/form-data');
    expect(res.statusCode, res.body).toBe(400);
    expect(await rows(a)).toBe(before);
  });

  it('I7 a body cut short in the file: 400 malformed-body; no row', async () => {
    const before = await rows(a);
    const { payload, headers } = multipart({ chatapp_phone_number: a.number }, [{ ...png, bytes: FILES.png(4096) }]);
    await refused(await raw(a, payload.subarray(0, payload.length - 1000), headers['content-type']!), 400, 'malformed-body', before);
  });

  it('I8 JSON sent to the upload operation: 415', async () => {
    const before = await rows(a);
    await refused(await raw(a, JSON.stringify({ chatapp_phone_number: a.number }), 'application/json'), 415, 'unsupported-media-type', before);
  });

  it('an unknown sender: 404 naming chatapp_phone_number; no provider call', async () => {
    const before = await rows(a);
    const p = await refused(await upload(a, { chatapp_phone_number: '+15550109999' }, [png]), 404, 'not-found', before);
    expect(p.errors[0].pointer).toBe('/body/chatapp_phone_number');
  });

  it("B1 another workspace's number: 404, the same body as an unknown one", async () => {
    const before = await rows(a);
    const other = await refused(await upload(a, { chatapp_phone_number: b.number }, [png]), 404, 'not-found', before);
    const unknown = await refused(await upload(a, { chatapp_phone_number: '+15550109999' }, [png]), 404, 'not-found', before);
    expect(other.detail.replace(b.number, 'N')).toBe(unknown.detail.replace('+15550109999', 'N'));
    expect(await rows(b)).toBe(0);
  });
});
