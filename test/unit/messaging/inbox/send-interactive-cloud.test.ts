// The new kinds of POST /api/chatapp/send against the fake Cloud API on 127.0.0.1: the exact body
// Meta receives for reply buttons, lists, call-to-action URLs, Flows, reactions, stickers,
// contact cards and location requests; a refusal by our rules makes no provider call.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { newId } from '#server/lib/ids.js';
import { cloudCustomerWrote, cloudTenant, type Tenant } from './support.js';

const CUSTOMER = '+4915112345678';
const WAMID = 'wamid.HBgNNDkxNTExMjM0NTY3OBUCABIYFjNFQjBDMEFEQkM3RjI4QzEwQTdGQTYA';
let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;
let inboundId: string;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
  t = await cloudTenant(app);
  await cloudCustomerWrote(app, t, CUSTOMER);
  const db = app.platform.store.db;
  const contact = await db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', t.workspaceId)
    .where('phone', '=', CUSTOMER)
    .executeTakeFirstOrThrow();
  inboundId = newId('msg');
  await db
    .insertInto('messages')
    .values({
      id: inboundId,
      workspace_id: t.workspaceId,
      phone_number_id: t.pnId,
      contact_id: contact.id,
      direction: 'inbound',
      type: 'text',
      content: JSON.stringify({ text: 'Hi' }),
      provider_message_id: WAMID,
      status: 'received',
      created_at: new Date(),
      status_at: new Date(),
    })
    .execute();
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const send = (body: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/chatapp/send', headers: t.headers, payload: { contact_no: CUSTOMER, chatapp_phone_number: t.number, ...body } });
const sends = () => fake.requests.filter((r) => /\/messages$/.test(r.path));
const ENVELOPE = { messaging_product: 'whatsapp', recipient_type: 'individual', to: CUSTOMER.slice(1) };

/** The body Meta received, without our callback data (our message id). */
function wire() {
  expect(sends()).toHaveLength(1);
  const { biz_opaque_callback_data, ...rest } = sends()[0].body as Record<string, unknown>;
  expect(biz_opaque_callback_data).toMatch(/^msg_/);
  return rest;
}

describe("the new kinds as Meta's Cloud API expects them", () => {
  it('reply buttons with an image header', async () => {
    const res = await send({
      messageType: 'buttons',
      message: 'Pick up or delivery?',
      header: { type: 'image', mediaUrl: 'https://cdn.example.com/order.jpg' },
      footer: 'Acme',
      buttons: [
        { id: 'pickup', title: 'Pick it up' },
        { id: 'deliver', title: 'Deliver it' },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()).toEqual({
      ...ENVELOPE,
      type: 'interactive',
      interactive: {
        type: 'button',
        header: { type: 'image', image: { link: 'https://cdn.example.com/order.jpg' } },
        body: { text: 'Pick up or delivery?' },
        footer: { text: 'Acme' },
        action: {
          buttons: [
            { type: 'reply', reply: { id: 'pickup', title: 'Pick it up' } },
            { type: 'reply', reply: { id: 'deliver', title: 'Deliver it' } },
          ],
        },
      },
    });
  });

  it('a list with a text header and two sections', async () => {
    const res = await send({
      messageType: 'list',
      message: 'Which size?',
      header: { type: 'text', text: 'Blue sneaker' },
      button_text: 'Sizes',
      sections: [
        { title: 'EU', rows: [{ id: 'eu-40', title: '40', description: 'In stock' }] },
        { title: 'US', rows: [{ id: 'us-8', title: '8' }] },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()).toEqual({
      ...ENVELOPE,
      type: 'interactive',
      interactive: {
        type: 'list',
        header: { type: 'text', text: 'Blue sneaker' },
        body: { text: 'Which size?' },
        action: {
          button: 'Sizes',
          sections: [
            { title: 'EU', rows: [{ id: 'eu-40', title: '40', description: 'In stock' }] },
            { title: 'US', rows: [{ id: 'us-8', title: '8' }] },
          ],
        },
      },
    });
  });

  it('a call-to-action URL with a document header', async () => {
    const res = await send({
      messageType: 'cta_url',
      message: 'Your invoice and tracking',
      header: { type: 'document', mediaUrl: 'https://cdn.example.com/1042.pdf', filename: 'invoice.pdf' },
      button_text: 'Track parcel',
      url: 'https://track.example.com/1042',
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()).toEqual({
      ...ENVELOPE,
      type: 'interactive',
      interactive: {
        type: 'cta_url',
        header: { type: 'document', document: { link: 'https://cdn.example.com/1042.pdf', filename: 'invoice.pdf' } },
        body: { text: 'Your invoice and tracking' },
        action: { name: 'cta_url', parameters: { display_text: 'Track parcel', url: 'https://track.example.com/1042' } },
      },
    });
  });

  it('a Flow opened on its first screen (navigate, flow_action_payload.screen)', async () => {
    const res = await send({
      messageType: 'flow',
      message: 'Book a fitting',
      flow_id: '1234567890123456',
      flow_cta: 'Book now',
      flow_token: 'booking-1042',
      flow_action_payload: { screen: 'APPOINTMENT', data: { store: 'Mitte' } },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()).toEqual({
      ...ENVELOPE,
      type: 'interactive',
      interactive: {
        type: 'flow',
        body: { text: 'Book a fitting' },
        action: {
          name: 'flow',
          parameters: {
            flow_message_version: '3',
            flow_id: '1234567890123456',
            flow_cta: 'Book now',
            flow_token: 'booking-1042',
            flow_action: 'navigate',
            flow_action_payload: { screen: 'APPOINTMENT', data: { store: 'Mitte' } },
          },
        },
      },
    });
  });

  it('a Flow by name with data_exchange', async () => {
    const res = await send({ messageType: 'flow', message: 'Sign up', flow_name: 'signup', flow_cta: 'Sign up', flow_action: 'data_exchange', mode: 'draft' });
    expect(res.statusCode, res.body).toBe(201);
    expect((wire().interactive as { action: unknown }).action).toEqual({
      name: 'flow',
      parameters: { flow_message_version: '3', flow_name: 'signup', flow_cta: 'Sign up', flow_action: 'data_exchange', mode: 'draft' },
    });
  });

  it("a reaction names the customer's message by its wamid; removing it sends an empty emoji", async () => {
    expect((await send({ messageType: 'reaction', message_id: inboundId, emoji: '❤️' })).statusCode).toBe(201);
    expect(wire()).toEqual({ ...ENVELOPE, type: 'reaction', reaction: { message_id: WAMID, emoji: '❤️' } });
    fake.reset();
    expect((await send({ messageType: 'reaction', message_id: inboundId, emoji: '' })).statusCode).toBe(201);
    expect(wire()).toEqual({ ...ENVELOPE, type: 'reaction', reaction: { message_id: WAMID, emoji: '' } });
  });

  it('a sticker by link', async () => {
    expect((await send({ messageType: 'sticker', mediaUrl: 'https://cdn.example.com/thanks.webp' })).statusCode).toBe(201);
    expect(wire()).toEqual({ ...ENVELOPE, type: 'sticker', sticker: { link: 'https://cdn.example.com/thanks.webp' } });
  });

  it('contact cards as given', async () => {
    const card = {
      name: { formatted_name: 'Acme Support', first_name: 'Acme', last_name: 'Support' },
      phones: [{ phone: '+1 415 555 0100', type: 'WORK', wa_id: '14155550100' }],
      emails: [{ email: 'support@acme.example', type: 'WORK' }],
      urls: [{ url: 'https://acme.example/', type: 'WORK' }],
      org: { company: 'Acme', title: 'Support' },
      birthday: '1990-02-28',
    };
    expect((await send({ messageType: 'contacts', contacts: [card] })).statusCode).toBe(201);
    expect(wire()).toEqual({ ...ENVELOPE, type: 'contacts', contacts: [card] });
  });

  it('a location request', async () => {
    expect((await send({ messageType: 'location_request', message: 'Where should we deliver?' })).statusCode).toBe(201);
    expect(wire()).toEqual({
      ...ENVELOPE,
      type: 'interactive',
      interactive: { type: 'location_request_message', body: { text: 'Where should we deliver?' }, action: { name: 'send_location' } },
    });
  });

  it('refused by our rules (duplicate row ids, a birthday that is no date): 422, no provider call', async () => {
    const dup = await send({
      messageType: 'list',
      message: 'Pick',
      button_text: 'Open',
      sections: [
        {
          rows: [
            { id: 'a', title: 'A' },
            { id: 'a', title: 'B' },
          ],
        },
      ],
    });
    expect(dup.statusCode, dup.body).toBe(422);
    expect(dup.json().errors[0].pointer).toBe('/body/sections/0/rows/1/id');
    const day = await send({ messageType: 'contacts', contacts: [{ name: { formatted_name: 'A', first_name: 'A' }, birthday: '1990-02-30' }] });
    expect(day.statusCode, day.body).toBe(422);
    expect(day.json().errors[0].pointer).toBe('/body/contacts/0/birthday');
    expect(sends()).toHaveLength(0);
  });
});
