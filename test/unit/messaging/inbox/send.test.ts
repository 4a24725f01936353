// POST /api/chatapp/send against the sandbox: every JSON kind, the 24-hour rule (bad-inputs H15), sender
// and reply isolation (bad-inputs B3), recipient numbers (bad-inputs H5), media URL policy (bad-inputs G1, G2, G11), templates
// (approved only, values literal: bad-inputs J7), marketing routing, idempotency.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { counts, customerWrites, PROBLEMS, sandbox, settle, storeTemplate, tenant, type Tenant } from './support.js';

const CUSTOMER = '+4915112345678';
let app: FastifyInstance;
let strictApp: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  // Production-like URL policy: private targets refused.
  strictApp = await buildShared({ env: { ALLOW_PRIVATE_URLS: 'false' } });
  a = await tenant(app);
  b = await tenant(app);
  await customerWrites(app, a, CUSTOMER, 'Hi there');
}, 240_000);

const send = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}, on = app) =>
  on.inject({
    method: 'POST',
    url: '/api/chatapp/send',
    headers: { ...t.headers, ...headers },
    payload: { contact_no: CUSTOMER, chatapp_phone_number: t.number, ...body },
  });

async function row(id: string) {
  return app.platform.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('sendMessage: every kind', () => {
  it('text inside the window: 201, our id and the wamid, row accepted then statuses move it on', async () => {
    const res = await send(a, { messageType: 'text', message: 'Your order shipped' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ status: 'accepted', messageType: 'text', contact_no: CUSTOMER, chatapp_phone_number: a.number, route: 'cloud_api' });
    expect(body.id).toMatch(/^msg_/);
    expect(body.wamid).toMatch(/^wamid\./);
    expect(body.chat_id).toMatch(/^chat_/);
    await sandbox(app).idle();
    const r = await row(body.id);
    expect(r.status).toBe('read');
    expect(r.provider_message_id).toBe(body.wamid);
    expect(r.read_at).not.toBeNull();
    expect(r.delivered_at).not.toBeNull();
  });

  it.each([
    ['image', { mediaUrl: 'https://cdn.example.com/a.jpg', message: 'In blue' }],
    ['video', { mediaUrl: 'https://cdn.example.com/a.mp4' }],
    ['audio', { mediaUrl: 'https://cdn.example.com/a.ogg' }],
    ['document', { mediaUrl: 'https://cdn.example.com/invoices/1042.pdf', filename: 'invoice.pdf', message: 'Invoice' }],
  ])('%s by URL: 201 and the medium stored', async (messageType, extra) => {
    const res = await send(a, { messageType, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    const r = await row(res.json().id);
    expect(r.type).toBe(messageType);
    expect((r.content as any).media.url).toBe(extra.mediaUrl);
  });

  it('location: 201', async () => {
    const res = await send(a, { messageType: 'location', location: { latitude: 52.52, longitude: 13.405, name: 'Shop' } });
    expect(res.statusCode, res.body).toBe(201);
    expect((await row(res.json().id)).content).toMatchObject({ location: { latitude: 52.52, longitude: 13.405 } });
  });

  it('media group: every part sent in order, each with its wamid', async () => {
    const media = [
      { type: 'image', mediaUrl: 'https://cdn.example.com/1.jpg', caption: 'one' },
      { type: 'document', mediaUrl: 'https://cdn.example.com/2.pdf' },
      { type: 'video', mediaUrl: 'https://cdn.example.com/3.mp4' },
    ];
    const res = await send(a, { messageType: 'media_group', media });
    expect(res.statusCode, res.body).toBe(201);
    const parts = res.json().parts;
    expect(parts.map((p: any) => p.type)).toEqual(['image', 'document', 'video']);
    expect(parts.every((p: any) => p.status === 'accepted' && p.wamid)).toBe(true);
    const rows = await Promise.all(parts.map((p: any) => row(p.id)));
    expect(rows.map((r) => (r.content as any).media.url)).toEqual(media.map((m) => m.mediaUrl));
    expect(rows[0].created_at.getTime()).toBeLessThan(rows[2].created_at.getTime());
  });

  it("a reply to a message of the chat quotes it; another chat's message id is 404", async () => {
    const first = (await send(a, { messageType: 'text', message: 'first' })).json();
    const res = await send(a, { messageType: 'text', message: 'second', reply_to: first.id });
    expect(res.statusCode, res.body).toBe(201);
    expect((await row(res.json().id)).reply_to_id).toBe(first.id);
    const other = await send(b, { messageType: 'template', template: { name: 'nope', language: 'en_US' }, reply_to: first.id });
    expect(other.statusCode).toBe(404);
  });
});

describe('the 24-hour window (H15)', () => {
  it('H15 free-form text to a contact last heard 24 h + 1 s ago: 422 outside-window, nothing sent; at 23 h 59 min it is sent', async () => {
    const t = await tenant(app);
    const late = '+4915112340001';
    const fresh = '+4915112340002';
    await customerWrites(app, t, late, 'old', 24 * 3600_000 + 1000);
    await customerWrites(app, t, fresh, 'recent', 23 * 3600_000 + 59 * 60_000);
    const before = await counts(app);
    const refused = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: late, chatapp_phone_number: t.number, messageType: 'text', message: 'Hi' },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(refused.json().detail).toMatch(/template/);
    expect(await counts(app)).toEqual(before);
    const sent = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: fresh, chatapp_phone_number: t.number, messageType: 'text', message: 'Hi' },
    });
    expect(sent.statusCode, sent.body).toBe(201);
  });

  it('outside the window the media URL is not looked at: 422 outside-window before the URL check (which may wait on DNS)', async () => {
    const t = await tenant(strictApp);
    const stranger = '+4915112340009';
    for (const body of [
      { messageType: 'image', mediaUrl: 'http://127.0.0.1/a.jpg' },
      { messageType: 'buttons', message: 'Pick', header: { type: 'image', mediaUrl: 'http://127.0.0.1/h.jpg' }, buttons: [{ id: 'a', title: 'A' }] },
    ]) {
      const res = await send(t, { ...body, contact_no: stranger }, {}, strictApp);
      expect(res.json().type, res.body).toBe(`${PROBLEMS}outside-window`);
    }
    // Inside the window the same URL is checked and refused.
    await customerWrites(strictApp, t, stranger, 'hello');
    const res = await send(t, { messageType: 'image', mediaUrl: 'http://127.0.0.1/a.jpg', contact_no: stranger }, {}, strictApp);
    expect(res.json().type, res.body).toBe(`${PROBLEMS}unsafe-url`);
  });

  it('a number that never wrote: free-form refused without creating the contact; an approved template creates it', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, {
      name: 'order_shipped',
      components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} shipped.', example: { body_text: [['Lena', '1042']] } }],
    });
    const stranger = '+4915112340003';
    const before = await counts(app);
    const refused = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: stranger, chatapp_phone_number: t.number, messageType: 'image', mediaUrl: 'https://cdn.example.com/a.jpg' },
    });
    expect(refused.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(await counts(app)).toEqual(before);
    const res = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: {
        contact_no: '+49 151 1234-0003',
        chatapp_phone_number: t.number,
        messageType: 'template',
        template: { name: 'order_shipped', language: 'en_US', body: ['Lena', '1042'] },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const contact = await app.platform.store.db.selectFrom('contacts').selectAll().where('id', '=', res.json().contact_id).executeTakeFirstOrThrow();
    expect(contact.phone).toBe(stranger);
    expect((await row(res.json().id)).content).toMatchObject({ text: 'Hi Lena, order 1042 shipped.', template: { name: 'order_shipped' } });
  });
});

describe('templates in sends', () => {
  it('only APPROVED templates: PENDING and REJECTED answer 422, unknown 404; provider not called', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, { name: 'promo_pending', status: 'PENDING', components: [{ type: 'BODY', text: 'Hi' }] });
    await storeTemplate(app, t, { name: 'promo_rejected', status: 'REJECTED', components: [{ type: 'BODY', text: 'Hi' }] });
    const before = await counts(app);
    for (const name of ['promo_pending', 'promo_rejected']) {
      const res = await send(t, { messageType: 'template', template: { name, language: 'en_US' } });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0].pointer).toBe('/body/template/name');
    }
    expect((await send(t, { messageType: 'template', template: { name: 'missing', language: 'en_US' } })).statusCode).toBe(404);
    expect(await counts(app)).toEqual(before);
  });

  it('H14 wrong number of body values, or a header of another format: 422 naming the field', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, {
      name: 'doc_ready',
      components: [
        { type: 'HEADER', format: 'DOCUMENT', header_url: 'https://cdn.example.com/sample.pdf' },
        { type: 'BODY', text: 'Hi {{1}}, your document is ready.', example: { body_text: [['Lena']] } },
      ],
    });
    const few = await send(t, { messageType: 'template', template: { name: 'doc_ready', language: 'en_US' } });
    expect(few.statusCode).toBe(422);
    expect(few.json().errors[0].pointer).toBe('/body/template/body');
    const wrong = await send(t, {
      messageType: 'template',
      template: { name: 'doc_ready', language: 'en_US', body: ['Lena'], header: { type: 'image', media_url: 'https://cdn.example.com/a.jpg' } },
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().errors[0].pointer).toBe('/body/template/header/type');
  });

  it('J7 variable values holding {{1}}, {{contact.phone}} and ${process.env.X} are stored and sent literally', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, {
      name: 'echo_values',
      components: [{ type: 'BODY', text: 'A {{1}} B {{2}} C {{3}}', example: { body_text: [['x', 'y', 'z']] } }],
    });
    const values = ['{{2}}', '{{contact.phone}}', '${process.env.SECRET_KEY}'];
    const res = await send(t, { messageType: 'template', template: { name: 'echo_values', language: 'en_US', body: values } });
    expect(res.statusCode, res.body).toBe(201);
    expect(((await row(res.json().id)).content as any).text).toBe('A {{2}} B {{contact.phone}} C ${process.env.SECRET_KEY}');
  });

  it('a document header by per-message mediaUrl, and contact-field variables with fallback', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, {
      name: 'invoice_doc',
      components: [
        { type: 'HEADER', format: 'DOCUMENT', header_url: 'https://cdn.example.com/sample.pdf' },
        { type: 'BODY', text: 'Dear {{1}}, mail {{2}}', example: { body_text: [['Lena', 'a@b.c']] } },
      ],
    });
    const res = await send(t, {
      messageType: 'template',
      mediaUrl: 'https://cdn.example.com/invoices/7.pdf',
      filename: 'invoice-7.pdf',
      template: {
        name: 'invoice_doc',
        language: 'en_US',
        body: [
          { from_contact: 'name', fallback: 'customer' },
          { from_contact: 'email', fallback: 'no email' },
        ],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(((await row(res.json().id)).content as any).text).toBe('Dear customer, mail no email');
  });
});

describe('bad inputs', () => {
  it("B3 another workspace's sender number: 404 naming chatapp_phone_number, nothing changed", async () => {
    const before = await counts(app);
    const res = await send(b, { messageType: 'text', message: 'Hi', chatapp_phone_number: a.number });
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    expect(res.json().errors[0].pointer).toBe('/body/chatapp_phone_number');
    const unknown = await send(b, { messageType: 'text', message: 'Hi', chatapp_phone_number: '+15550109999' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail.replace('+15550109999', 'N')).toBe(res.json().detail.replace(a.number, 'N'));
    expect(await counts(app)).toEqual(before);
  });

  it.each(['12345', '+1555', '+999999999999999999', '+1-555-0100-abc'])('H5 recipient %s: 400 /body/contact_no', async (contact_no) => {
    const res = await send(a, { messageType: 'text', message: 'Hi', contact_no });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.some((e: any) => e.pointer === '/body/contact_no')).toBe(true);
  });

  it('H1 wrong types: message 42, latitude "1.5": 400 validation', async () => {
    expect((await send(a, { messageType: 'text', message: 42 })).statusCode).toBe(400);
    const loc = await send(a, { messageType: 'location', location: { latitude: '1.5', longitude: 1 } });
    expect(loc.statusCode).toBe(400);
  });

  it('H4 messageType "sms": 400', async () => {
    const res = await send(a, { messageType: 'sms', message: 'Hi' });
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(`${PROBLEMS}validation`);
  });

  it.each(['http://127.0.0.1:8080/a.jpg', 'http://localhost/a.jpg', 'http://0.0.0.0/a.jpg', 'http://0/a.jpg'])(
    'G1 mediaUrl %s: 422 unsafe-url naming mediaUrl',
    async (mediaUrl) => {
      const before = await counts(strictApp);
      const s = await tenant(strictApp);
      await customerWrites(strictApp, s, CUSTOMER);
      const mid = await counts(strictApp);
      const res = await send(s, { messageType: 'image', mediaUrl }, {}, strictApp);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().type).toBe(`${PROBLEMS}unsafe-url`);
      expect(res.json().errors[0].pointer).toBe('/body/mediaUrl');
      expect(await counts(strictApp)).toEqual(mid);
      expect(mid.messages).toBeGreaterThan(before.messages);
    },
  );

  it.each(['http://10.0.0.1/a.jpg', 'http://172.16.0.1/a.jpg', 'http://192.168.1.1/a.jpg', 'http://100.64.0.1/a.jpg'])(
    'G2 mediaUrl %s in a media group: 422 naming the item',
    async (url) => {
      const s = await tenant(strictApp);
      await customerWrites(strictApp, s, CUSTOMER);
      const res = await send(
        s,
        {
          messageType: 'media_group',
          media: [
            { type: 'image', mediaUrl: 'https://cdn.example.com/ok.jpg' },
            { type: 'image', mediaUrl: url },
          ],
        },
        {},
        strictApp,
      );
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0].pointer).toBe('/body/media/1/mediaUrl');
    },
  );

  it.each(['file:///etc/passwd', 'gopher://x.test/', 'ftp://x.test/a.jpg', 'javascript:alert(1)', 'ws://x.test/'])(
    'G11 mediaUrl %s: 400 before any I/O',
    async (mediaUrl) => {
      const res = await send(a, { messageType: 'image', mediaUrl });
      expect(res.statusCode).toBe(400);
    },
  );

  it('G1 a template header mediaUrl on a loopback address: 422 unsafe-url', async () => {
    const s = await tenant(strictApp);
    await storeTemplate(strictApp, s, {
      name: 'img_hdr',
      components: [
        { type: 'HEADER', format: 'IMAGE', header_url: 'https://cdn.example.com/s.jpg' },
        { type: 'BODY', text: 'Hi' },
      ],
    });
    const res = await send(s, { messageType: 'template', mediaUrl: 'http://127.0.0.1/x.jpg', template: { name: 'img_hdr', language: 'en_US' } }, {}, strictApp);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/mediaUrl');
  });

  it('H3 unknown property: 400 naming it', async () => {
    const res = await send(a, { messageType: 'text', message: 'Hi', isAdmin: true });
    expect(res.statusCode).toBe(400);
  });
});

describe('marketing routing', () => {
  it('a MARKETING template goes through marketing messages when enabled and onboarded; STRICT without onboarding is refused', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, { name: 'big_sale', category: 'MARKETING', components: [{ type: 'BODY', text: 'Sale!' }] });
    const db = app.platform.store.db;
    // Defaults (not onboarded, fallback): the standard route.
    const plain = await send(t, { messageType: 'template', template: { name: 'big_sale', language: 'en_US' } });
    expect(plain.json().route).toBe('cloud_api');
    await db
      .insertInto('marketing_messages_settings')
      .values({
        business_account_id: t.wabaId,
        workspace_id: t.workspaceId,
        enabled: true,
        product_policy: 'STRICT',
        activity_sharing: null,
        onboarding_status: 'NOT_STARTED',
        updated_at: new Date(),
      })
      .execute();
    const strict = await send(t, { messageType: 'template', template: { name: 'big_sale', language: 'en_US' } });
    expect(strict.statusCode).toBe(422);
    await db.updateTable('marketing_messages_settings').set({ onboarding_status: 'ONBOARDED' }).where('business_account_id', '=', t.wabaId).execute();
    const routed = await send(t, { messageType: 'template', template: { name: 'big_sale', language: 'en_US' } });
    expect(routed.statusCode, routed.body).toBe(201);
    expect(routed.json().route).toBe('marketing_messages');
  });
});

describe('Idempotency-Key', () => {
  it('the same key and body replays the first answer without a second send; another body is 409', async () => {
    const headers = { 'idempotency-key': `k-${Math.random()}` };
    const first = await send(a, { messageType: 'text', message: 'once' }, headers);
    expect(first.statusCode).toBe(201);
    const before = await counts(app);
    const again = await send(a, { messageType: 'text', message: 'once' }, headers);
    expect(again.statusCode).toBe(201);
    expect(again.json().id).toBe(first.json().id);
    expect(await counts(app)).toEqual(before);
    const other = await send(a, { messageType: 'text', message: 'twice' }, headers);
    expect(other.statusCode).toBe(409);
    await settle();
  });
  it("a key longer than 255 characters (the header's maxLength): 400 naming the header, nothing sent", async () => {
    const before = await counts(app);
    const res = await send(a, { messageType: 'text', message: 'long key' }, { 'Idempotency-Key': 'k'.repeat(256) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/header/idempotency-key', detail: expect.any(String) }]);
    expect(await counts(app)).toEqual(before);
  });
});
