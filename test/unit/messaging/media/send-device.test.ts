// POST /api/chatapp/send with multipart/form-data against the sandbox: the file is checked,
// uploaded for the sender, and sent by its media id; the stored message keeps type, size, name
// and ids. The 24-hour rule comes before the upload (bad-inputs H15); refusals store nothing (bad-inputs I1, I8, H2).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { counts, customerWrites, PROBLEMS, sandbox, tenant, type Tenant } from '../inbox/support.js';
import { FILES, multipart, type FilePartSpec } from './support.js';

const CUSTOMER = '+4915112345678';
const SILENT = '+4915187654321';
let app: FastifyInstance;
let a: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
  await customerWrites(app, a, CUSTOMER, 'Send me the photo');
}, 240_000);

const jpeg: FilePartSpec = { filename: 'blue-sneaker.jpg', type: 'image/jpeg', bytes: FILES.jpeg(2048) };
const send = (fields: Record<string, string>, files: FilePartSpec[] = [jpeg], headers: Record<string, string> = {}) => {
  const form = multipart({ contact_no: CUSTOMER, chatapp_phone_number: a.number, ...fields }, files);
  return app.inject({ method: 'POST', url: '/api/chatapp/send', headers: { ...a.headers, ...form.headers, ...headers }, payload: form.payload });
};
const uploads = async () =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('uploaded_media')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', a.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );
const message = (id: string) => app.platform.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('sendMessage from the device', () => {
  it('an image: uploaded, sent by media id, 201; the message records type, size, name and ids', async () => {
    const spy = vi.spyOn(sandbox(app), 'sendMessage');
    const res = await send({ messageType: 'image', message: 'Here it is in blue.' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ messageType: 'image', status: 'accepted', contact_no: CUSTOMER, chatapp_phone_number: a.number });
    const upload = await app.platform.store.db
      .selectFrom('uploaded_media')
      .selectAll()
      .where('workspace_id', '=', a.workspaceId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(spy.mock.calls.at(-1)![2]).toEqual({ type: 'image', image: { id: upload.provider_media_id, caption: 'Here it is in blue.' } });
    spy.mockRestore();
    const row = await message(res.json().id);
    expect(row.type).toBe('image');
    expect(row.content).toMatchObject({
      caption: 'Here it is in blue.',
      media: {
        url: null,
        mime_type: 'image/jpeg',
        size_bytes: 2048,
        filename: 'blue-sneaker.jpg',
        media_id: upload.id,
        provider_media_id: upload.provider_media_id,
      },
    });
    // The contract's view of it.
    const listed = await app.inject({ method: 'GET', url: `/api/chatapp/messages?contact_id=${res.json().contact_id}&limit=1`, headers: a.headers });
    expect(listed.json().data[0].content).toEqual({
      caption: 'Here it is in blue.',
      media: { url: null, mime_type: 'image/jpeg', filename: 'blue-sneaker.jpg', size_bytes: 2048 },
    });
  });

  it('a document: the filename part is the name shown; the bytes decide the type', async () => {
    const res = await send({ messageType: 'document', filename: 'invoice-1042.pdf', message: 'Your invoice' }, [
      { filename: 'scan.bin', type: 'application/octet-stream', bytes: FILES.pdf() },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    const row = await message(res.json().id);
    expect(row.content).toMatchObject({ caption: 'Your invoice', media: { mime_type: 'application/pdf', filename: 'invoice-1042.pdf' } });
  });

  it('audio (MP3) and video (MP4) are sent', async () => {
    expect((await send({ messageType: 'audio' }, [{ filename: 'note.mp3', type: 'audio/mpeg', bytes: FILES.mp3() }])).statusCode).toBe(201);
    expect((await send({ messageType: 'video' }, [{ filename: 'unboxing.mp4', type: 'video/mp4', bytes: FILES.mp4() }])).statusCode).toBe(201);
  });

  it('I1 messageType image with PDF bytes: 415 "content does not match image"; nothing stored or sent', async () => {
    const before = { ...(await counts(app)), uploads: await uploads() };
    const res = await send({ messageType: 'image' }, [{ filename: 'x.jpg', type: 'application/octet-stream', bytes: FILES.pdf() }]);
    expect(res.statusCode, res.body).toBe(415);
    expect(res.json().errors).toEqual([{ pointer: '/body/file', detail: 'content does not match image' }]);
    expect({ ...(await counts(app)), uploads: await uploads() }).toEqual(before);
  });

  it('I3 an image over 5 MB: 413', async () => {
    const res = await send({ messageType: 'image' }, [{ ...jpeg, bytes: FILES.jpeg(5 * 1024 * 1024 + 1) }]);
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json().type).toBe(`${PROBLEMS}payload-too-large`);
  });

  it('I8 an empty file: 400', async () => {
    const res = await send({ messageType: 'image' }, [{ ...jpeg, bytes: Buffer.alloc(0) }]);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/body/file', detail: 'is empty' }]);
  });

  it('H2 no file: 400 naming file', async () => {
    const res = await send({ messageType: 'image' }, []);
    expect(res.statusCode, res.body).toBe(400);
    expect(JSON.stringify(res.json().errors)).toContain('file');
  });

  it('I6 two files: 400', async () => {
    const res = await send({ messageType: 'image' }, [jpeg, { ...jpeg, filename: 'b.jpg' }]);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/body/file', detail: 'only one file is accepted' }]);
  });

  it('H4 messageType text in a form: 400 (only media kinds come from the device)', async () => {
    const res = await send({ messageType: 'text' });
    expect(res.statusCode, res.body).toBe(400);
    expect(JSON.stringify(res.json().errors)).toContain('messageType');
  });

  it('H14 a caption on audio: 400 naming message', async () => {
    const res = await send({ messageType: 'audio', message: 'listen' }, [{ filename: 'note.mp3', type: 'audio/mpeg', bytes: FILES.mp3() }]);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/message');
  });

  it('H14 a filename on an image: 400 naming filename (only documents have one)', async () => {
    const res = await send({ messageType: 'image', filename: 'x.jpg' });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/filename');
  });

  it('reply_to: the device file quotes an earlier message of the chat', async () => {
    const first = await send({ messageType: 'image' });
    const res = await send({ messageType: 'image', reply_to: first.json().id });
    expect(res.statusCode, res.body).toBe(201);
    expect((await message(res.json().id)).reply_to_id).toBe(first.json().id);
  });

  it('H15 outside the 24-hour window: 422 outside-window before any upload (no provider call, nothing stored)', async () => {
    const upload = vi.spyOn(sandbox(app), 'uploadMedia');
    const before = { ...(await counts(app)), uploads: await uploads() };
    const form = multipart({ contact_no: SILENT, chatapp_phone_number: a.number, messageType: 'image' }, [jpeg]);
    const res = await app.inject({ method: 'POST', url: '/api/chatapp/send', headers: { ...a.headers, ...form.headers }, payload: form.payload });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(upload).not.toHaveBeenCalled();
    upload.mockRestore();
    expect({ ...(await counts(app)), uploads: await uploads() }).toEqual(before);
  });

  it('an unknown sender: 404 before any upload', async () => {
    const upload = vi.spyOn(sandbox(app), 'uploadMedia');
    const res = await send({ messageType: 'image', chatapp_phone_number: '+15550109999' });
    expect(res.statusCode, res.body).toBe(404);
    expect(upload).not.toHaveBeenCalled();
    upload.mockRestore();
  });

  it('Idempotency-Key: the same form and bytes replay the first answer without a second upload; other bytes 409', async () => {
    const key = `media-${Date.now()}`;
    const first = await send({ messageType: 'image' }, [jpeg], { 'idempotency-key': key });
    expect(first.statusCode, first.body).toBe(201);
    const before = await uploads();
    const again = await send({ messageType: 'image' }, [jpeg], { 'idempotency-key': key });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(await uploads()).toBe(before);
    const other = await send({ messageType: 'image' }, [{ ...jpeg, bytes: FILES.jpeg(4096) }], { 'idempotency-key': key });
    expect(other.statusCode).toBe(409);
  });

  it('the sandbox refuses a media id it never uploaded for the number (a send by id is checked)', async () => {
    const pn = { wabaId: 'x', phoneNumberId: a.providerPnId };
    await expect(sandbox(app).sendMessage(pn, CUSTOMER, { type: 'image', image: { id: '123456789012345' } })).rejects.toMatchObject({ code: 100 });
  });
});
