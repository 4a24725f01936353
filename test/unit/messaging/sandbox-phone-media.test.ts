// The sandbox phone sends a photo or a document as a customer would: the multipart form with
// a file reaches the workspace as an image or document message (kind and type from the bytes,
// the text as caption, a document's name), and the API downloads the very bytes the phone sent.
// A file the provider would not take is refused on the page, with nothing stored.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildShared } from '#test/helper.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { tenant, type Tenant } from './inbox/support.js';
import { FILES, multipart, type FilePartSpec } from './media/support.js';

let app: FastifyInstance;
let t: Tenant;
beforeAll(async () => {
  app = await buildShared();
  t = await tenant(app);
});

/** Opens the phone page and posts its form, as multipart, with `file` (cookies and CSRF token carried over). */
async function send(fields: Record<string, string>, file?: FilePartSpec): Promise<LightMyRequestResponse> {
  const page = await app.inject('/sandbox/phone');
  const cookie = (page.cookies as { name: string; value: string }[]).map((c) => `${c.name}=${c.value}`).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
  expect(page.body).toContain('enctype="multipart/form-data"');
  expect(page.body).toContain('type="file"');
  const form = multipart({ _csrf: csrf, to: t.pnId, ...fields }, file ? [file] : []);
  return app.inject({ method: 'POST', url: '/sandbox/phone/send', headers: { ...form.headers, cookie }, payload: form.payload });
}

async function lastMessage(from: string) {
  return app.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.id', 'messages.type', 'messages.content'])
    .where('messages.workspace_id', '=', t.workspaceId)
    .where('contacts.phone', '=', from)
    .orderBy('messages.created_at', 'desc')
    .executeTakeFirst();
}

const download = (id: string) => app.inject({ method: 'GET', url: `/api/chatapp/messages/${id}/media`, headers: t.headers });

describe('the sandbox phone sends media', () => {
  it('a photo with a caption: an image message whose download is the bytes sent', async () => {
    const bytes = FILES.jpeg(5000);
    const res = await send({ from: '+15550100201', name: 'Ana', text: 'my broken parcel' }, { filename: 'IMG_0001.jpg', type: 'image/jpeg', bytes });
    expect(res.statusCode, res.body).toBe(303);
    const row = await lastMessage('+15550100201');
    expect(row).toMatchObject({
      type: 'image',
      content: { caption: 'my broken parcel', media: { mime_type: 'image/jpeg', provider_media_id: expect.any(String) } },
    });
    const file = await download(row!.id);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('image/jpeg');
    expect(Buffer.compare(file.rawPayload, bytes)).toBe(0);
    // The API tells its size and the device's name for it, not null.
    const contact = await app.platform.store.db
      .selectFrom('contacts')
      .select('id')
      .where('phone', '=', '+15550100201')
      .where('workspace_id', '=', t.workspaceId)
      .executeTakeFirstOrThrow();
    const api = await app.inject({ url: `/api/chatapp/messages?contact_id=${contact.id}`, headers: t.headers });
    const listed = api.json().data.find((m: { id: string }) => m.id === row!.id);
    expect(listed.content.media).toMatchObject({ size_bytes: bytes.length, filename: 'IMG_0001.jpg', mime_type: 'image/jpeg' });
  });

  it("a photo shows as a thumbnail in the sender's conversation, served to that browser only", async () => {
    const page = await app.inject('/sandbox/phone');
    const cookie = (page.cookies as { name: string; value: string }[]).map((c) => `${c.name}=${c.value}`).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const bytes = FILES.png(4000);
    const form = multipart({ _csrf: csrf, to: t.pnId, from: '+15550100209', name: 'Bo', text: 'look' }, [{ filename: 'shot.png', type: 'image/png', bytes }]);
    const sent = await app.inject({ method: 'POST', url: '/sandbox/phone/send', headers: { ...form.headers, cookie }, payload: form.payload });
    expect(sent.statusCode, sent.body).toBe(303);
    const browser = [cookie, ...(sent.cookies as { name: string; value: string }[]).map((c) => `${c.name}=${c.value}`)].join('; ');
    const phone = await app.inject({ url: `/sandbox/phone?to=${t.pnId}`, headers: { cookie: browser } });
    const src = /<img class="thumb" src="([^"]+)"/.exec(phone.body)?.[1];
    const row = await lastMessage('+15550100209');
    expect(src).toBe(`/sandbox/phone/media/${row!.id}`);
    const thumb = await app.inject({ url: src!, headers: { cookie: browser } });
    expect(thumb.statusCode).toBe(200);
    expect(thumb.headers['content-type']).toBe('image/png');
    expect(thumb.headers['x-content-type-options']).toBe('nosniff');
    expect(Buffer.compare(thumb.rawPayload, bytes)).toBe(0);
    // Another browser (no cookie of this conversation) and unknown ids get the 404.
    expect((await app.inject({ url: src! })).statusCode).toBe(404);
    expect((await app.inject({ url: '/sandbox/phone/media/msg_unknownunknown1', headers: { cookie: browser } })).statusCode).toBe(404);
  });

  it('a document without text: a document message with its name, downloadable', async () => {
    const bytes = FILES.pdf(3000);
    const res = await send({ from: '+15550100202', text: '' }, { filename: 'invoice 1042.pdf', type: 'application/pdf', bytes });
    expect(res.statusCode, res.body).toBe(303);
    const row = await lastMessage('+15550100202');
    expect(row).toMatchObject({ type: 'document', content: { media: { mime_type: 'application/pdf', filename: 'invoice 1042.pdf' } } });
    expect((row!.content as Record<string, unknown>).caption).toBeUndefined();
    const file = await download(row!.id);
    expect(file.headers['content-disposition']).toBe("attachment; filename*=UTF-8''invoice%201042.pdf");
    expect(Buffer.compare(file.rawPayload, bytes)).toBe(0);
  });

  it('a text still goes as text through the multipart form; neither text nor file is refused', async () => {
    expect((await send({ from: '+15550100203', text: 'hello' })).statusCode).toBe(303);
    expect(await lastMessage('+15550100203')).toMatchObject({ type: 'text', content: { text: 'hello' } });
    const empty = await send({ from: '+15550100204', text: ' ' }, { filename: '', type: 'application/octet-stream', bytes: Buffer.alloc(0) });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain('Write a message or choose a file.');
    expect(await lastMessage('+15550100204')).toBeUndefined();
  });

  it('a file the provider would not take (HTML; an image over 5 MB): refused on the page, nothing stored', async () => {
    const html = await send({ from: '+15550100205', text: 'x' }, { filename: 'page.html', type: 'text/html', bytes: FILES.html() });
    expect(html.statusCode).toBe(415);
    expect(html.body).toContain('text/html');
    const big = await send({ from: '+15550100205', text: 'x' }, { filename: 'big.png', type: 'image/png', bytes: FILES.png(5 * 1024 * 1024 + 1) });
    expect(big.statusCode).toBe(413);
    expect(await lastMessage('+15550100205')).toBeUndefined();
  });

  it('a sender that is not a phone number of 8–15 digits: 400 naming from, nothing stored', async () => {
    for (const from of ['+1555010', 'abc12345678', '+0155501002', '+1555010020312345']) {
      await expect(sendFromSandboxPhone(app, { phoneNumberId: t.pnId, from, text: 'hi' })).rejects.toMatchObject({
        status: 400,
        problem: { errors: [{ pointer: '/body/from' }] },
      });
    }
    // With or without `+`, as the provider writes wa_ids.
    await sendFromSandboxPhone(app, { phoneNumberId: t.pnId, from: '15550100206', text: 'hi' });
    expect(await lastMessage('+15550100206')).toMatchObject({ type: 'text', content: { text: 'hi' } });
  });
});
