// POST /api/chatapp/send on the sandbox: reply buttons, lists, call-to-action URLs, Flows,
// reactions (and their removal), stickers, contact cards and location requests are stored and
// shown as sent; each kind's provider limits refuse bad input with the field named (nothing
// stored); the 24-hour rule applies to every one of them (bad-inputs H15).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { counts, customerWrites, PROBLEMS, sandbox, settle, tenant, type Tenant } from './support.js';

const CUSTOMER = '+4915112345679';
const LATE = '+4915112345680';
let app: FastifyInstance;
let a: Tenant;
let inboundId: string;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
  await customerWrites(app, a, CUSTOMER, 'Do you deliver?');
  await customerWrites(app, a, LATE, 'Hello', 24 * 3_600_000 + 1_000);
  await sandbox(app).idle();
  const row = await app.platform.store.db
    .selectFrom('messages')
    .select('id')
    .where('workspace_id', '=', a.workspaceId)
    .where('direction', '=', 'inbound')
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow();
  inboundId = row.id;
}, 240_000);

const send = (body: Record<string, unknown>, to = CUSTOMER) =>
  app.inject({ method: 'POST', url: '/api/chatapp/send', headers: a.headers, payload: { contact_no: to, chatapp_phone_number: a.number, ...body } });

async function shown(id: string) {
  const contact = await app.platform.store.db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', a.workspaceId)
    .where('phone', '=', CUSTOMER)
    .executeTakeFirstOrThrow();
  const res = await app.inject({ method: 'GET', url: `/api/chatapp/messages?contact_id=${contact.id}&limit=100`, headers: a.headers });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().data as { id: string }[]).find((m) => m.id === id) as Record<string, any>;
}

const buttons = {
  messageType: 'buttons',
  message: 'How would you like your order?',
  header: { type: 'text', text: 'Order #1042' },
  footer: 'Acme Store',
  buttons: [
    { id: 'pickup', title: 'Pick it up' },
    { id: 'deliver', title: 'Deliver it' },
  ],
};
const list = {
  messageType: 'list',
  message: 'Which size?',
  button_text: 'Sizes',
  sections: [
    { title: 'EU', rows: [{ id: 'eu-40', title: '40', description: 'In stock' }] },
    { title: 'US', rows: [{ id: 'us-8', title: '8' }] },
  ],
};

describe('sendMessage: interactive kinds on the sandbox', () => {
  it.each([
    ['buttons', buttons, 'button'],
    ['list', list, 'list'],
    ['cta_url', { messageType: 'cta_url', message: 'Track it', button_text: 'Track', url: 'https://track.example.com/1042' }, 'cta_url'],
    [
      'flow',
      {
        messageType: 'flow',
        message: 'Book a fitting',
        flow_id: '1234567890',
        flow_cta: 'Book',
        flow_action: 'navigate',
        flow_action_payload: { screen: 'APPOINTMENT' },
      },
      'flow',
    ],
    ['location_request', { messageType: 'location_request', message: 'Where are you?' }, 'location_request_message'],
  ])('%s: 201, stored as interactive and shown with the provider object it was sent as', async (kind, body, wireType) => {
    const res = await send(body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ messageType: kind, status: 'accepted' });
    const m = await shown(res.json().id);
    expect(m.type).toBe('interactive');
    expect(m.content.text).toBe((body as { message: string }).message);
    expect(m.content.interactive.type).toBe(wireType);
  });

  it('buttons are shown as sent: header, body, footer and each reply button', async () => {
    const res = await send(buttons);
    const m = await shown(res.json().id);
    expect(m.content.interactive).toEqual({
      type: 'button',
      header: { type: 'text', text: 'Order #1042' },
      body: { text: 'How would you like your order?' },
      footer: { text: 'Acme Store' },
      action: {
        buttons: [
          { type: 'reply', reply: { id: 'pickup', title: 'Pick it up' } },
          { type: 'reply', reply: { id: 'deliver', title: 'Deliver it' } },
        ],
      },
    });
  });

  it('a reaction to the customer message, then its removal with an empty emoji', async () => {
    const res = await send({ messageType: 'reaction', message_id: inboundId, emoji: '👍' });
    expect(res.statusCode, res.body).toBe(201);
    expect((await shown(res.json().id)).content.reaction).toEqual({ emoji: '👍', message_id: inboundId });
    const removed = await send({ messageType: 'reaction', message_id: inboundId, emoji: '' });
    expect(removed.statusCode, removed.body).toBe(201);
    const m = await shown(removed.json().id);
    expect(m.type).toBe('reaction');
    expect(m.content.reaction).toEqual({ emoji: '', message_id: inboundId });
  });

  it('a sticker by URL and contact cards are stored as sent', async () => {
    const sticker = await send({ messageType: 'sticker', mediaUrl: 'https://cdn.example.com/thanks.webp' });
    expect(sticker.statusCode, sticker.body).toBe(201);
    const s = await shown(sticker.json().id);
    expect(s.type).toBe('sticker');
    expect(s.content.media).toMatchObject({ url: 'https://cdn.example.com/thanks.webp', mime_type: 'image/webp' });
    const card = { name: { formatted_name: 'Acme Support', first_name: 'Acme' }, phones: [{ phone: '+1 415 555 0100', wa_id: '14155550100' }] };
    const contacts = await send({ messageType: 'contacts', contacts: [card] });
    expect(contacts.statusCode, contacts.body).toBe(201);
    const row = await app.platform.store.db.selectFrom('messages').select(['type', 'content']).where('id', '=', contacts.json().id).executeTakeFirstOrThrow();
    expect(row.type).toBe('contacts');
    expect((row.content as { contacts: unknown }).contacts).toEqual([card]);
    // Listed in the card's full shape (parts not given are null), as a received card is: the
    // stored card lacks them, which made listMessages fail to serialize (500).
    const listed = await shown(contacts.json().id);
    expect(listed.content.contacts).toEqual([
      {
        name: { formatted_name: 'Acme Support', first_name: 'Acme', last_name: null, middle_name: null, prefix: null, suffix: null },
        phones: [{ phone: '+1 415 555 0100', wa_id: '14155550100', type: null }],
        emails: [],
        org: null,
        urls: [],
        addresses: [],
        birthday: null,
      },
    ]);
  });

  it('H15 every new kind outside the 24-hour window: 422 outside-window, nothing stored', async () => {
    await settle();
    const before = await counts(app);
    for (const body of [
      buttons,
      list,
      { messageType: 'sticker', mediaUrl: 'https://cdn.example.com/thanks.webp' },
      { messageType: 'location_request', message: 'Where?' },
      { messageType: 'contacts', contacts: [{ name: { formatted_name: 'A B', first_name: 'A' } }] },
    ]) {
      const res = await send(body, LATE);
      expect(res.statusCode, `${body.messageType}: ${res.body}`).toBe(422);
      expect(res.json().type).toBe(`${PROBLEMS}outside-window`);
    }
    expect(await counts(app)).toEqual(before);
  });
});

describe('sendMessage: the provider limits of each kind (bad input names the field, nothing stored)', () => {
  it.each([
    ['4 reply buttons', { ...buttons, buttons: [1, 2, 3, 4].map((n) => ({ id: `b${n}`, title: `B${n}` })) }, 400, '/body/buttons'],
    ['a button title of 21 characters', { ...buttons, buttons: [{ id: 'x', title: 'x'.repeat(21) }] }, 400, '/body/buttons/0/title'],
    [
      'two buttons with one id',
      {
        ...buttons,
        buttons: [
          { id: 'yes', title: 'Yes' },
          { id: 'yes', title: 'Sure' },
        ],
      },
      422,
      '/body/buttons/1/id',
    ],
    ['a header text of 61 characters', { ...buttons, header: { type: 'text', text: 'h'.repeat(61) } }, 400, '/body/header/text'],
    ['a body of 1,025 characters', { ...buttons, message: 'b'.repeat(1025) }, 400, '/body/message'],
    ['a footer of 61 characters', { ...buttons, footer: 'f'.repeat(61) }, 400, '/body/footer'],
    ['two header kinds at once', { ...buttons, header: { type: 'text', text: 'Hi', mediaUrl: 'https://cdn.example.com/a.jpg' } }, 400, '/body/header'],
    [
      '11 rows over two sections',
      {
        ...list,
        sections: [
          { title: 'A', rows: Array.from({ length: 6 }, (_, i) => ({ id: `a${i}`, title: `A${i}` })) },
          { title: 'B', rows: Array.from({ length: 5 }, (_, i) => ({ id: `b${i}`, title: `B${i}` })) },
        ],
      },
      422,
      '/body/sections',
    ],
    ['a row title of 25 characters', { ...list, sections: [{ rows: [{ id: 'r', title: 'r'.repeat(25) }] }] }, 400, '/body/sections/0/rows/0/title'],
    [
      'a row description of 73 characters',
      { ...list, sections: [{ rows: [{ id: 'r', title: 'r', description: 'd'.repeat(73) }] }] },
      400,
      '/body/sections/0/rows/0/description',
    ],
    ['a list button of 21 characters', { ...list, button_text: 'l'.repeat(21) }, 400, '/body/button_text'],
    [
      'two sections, one without a title',
      {
        ...list,
        sections: [{ title: 'A', rows: [{ id: 'a', title: 'A' }] }, { rows: [{ id: 'b', title: 'B' }] }],
      },
      422,
      '/body/sections/1/title',
    ],
    ['a list with an image header', { ...list, header: { type: 'image', mediaUrl: 'https://cdn.example.com/a.jpg' } }, 400, '/body/header'],
    [
      'a cta_url button of 21 characters',
      { messageType: 'cta_url', message: 'Go', button_text: 'c'.repeat(21), url: 'https://a.example' },
      400,
      '/body/button_text',
    ],
    [
      'a Flow with navigate and no screen',
      { messageType: 'flow', message: 'Book', flow_id: '123', flow_cta: 'Book', flow_action: 'navigate' },
      422,
      '/body/flow_action_payload/screen',
    ],
    [
      'a Flow with both flow_id and flow_name',
      { messageType: 'flow', message: 'Book', flow_id: '123', flow_name: 'booking', flow_cta: 'Book', flow_action: 'data_exchange' },
      422,
      '/body/flow_id',
    ],
    [
      'a Flow CTA with an emoji',
      { messageType: 'flow', message: 'Book', flow_name: 'booking', flow_cta: 'Book 📅', flow_action: 'data_exchange' },
      422,
      '/body/flow_cta',
    ],
    ['a reaction of two emoji', { messageType: 'reaction', message_id: 'msg_0000000000000000', emoji: '👍👍' }, 404, '/body/message_id'],
    ['a contact name with only formatted_name', { messageType: 'contacts', contacts: [{ name: { formatted_name: 'Acme' } }] }, 422, '/body/contacts/0/name'],
    ['a sticker URL that is not http(s)', { messageType: 'sticker', mediaUrl: 'ftp://cdn.example.com/a.webp' }, 400, '/body/mediaUrl'],
    ['a location request body of 1,025 characters', { messageType: 'location_request', message: 'w'.repeat(1025) }, 400, '/body/message'],
    ['a list body of 4,097 characters', { ...list, message: 'l'.repeat(4097) }, 400, '/body/message'],
    [
      '11 contact cards',
      { messageType: 'contacts', contacts: Array.from({ length: 11 }, () => ({ name: { formatted_name: 'A', first_name: 'A' } })) },
      400,
      '/body/contacts',
    ],
  ])('%s: %d naming %s', async (_, body, status, pointer) => {
    await settle();
    const before = await counts(app);
    const res = await send(body);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    const pointers = (res.json().errors ?? []).map((e: { pointer: string }) => e.pointer);
    expect(
      pointers.some((p: string) => p === pointer || p.startsWith(pointer)),
      JSON.stringify(res.json()),
    ).toBe(true);
    expect(await counts(app)).toEqual(before);
  });

  it('a reaction with two emoji to a message of the chat: 422 naming emoji', async () => {
    const res = await send({ messageType: 'reaction', message_id: inboundId, emoji: '👍👍' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/emoji');
  });

  it("B3 a reaction to another chat's message: 404 naming message_id", async () => {
    const other = await tenant(app);
    await customerWrites(app, other, CUSTOMER, 'Hi');
    await sandbox(app).idle();
    const theirs = await app.platform.store.db.selectFrom('messages').select('id').where('workspace_id', '=', other.workspaceId).executeTakeFirstOrThrow();
    const res = await send({ messageType: 'reaction', message_id: theirs.id, emoji: '👍' });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().errors[0].pointer).toBe('/body/message_id');
  });
});
