// Every payload Meta publishes for its WhatsApp webhook (test/fakes/meta/, copied from
// ../shared/meta-webhook-examples/) posted signed to the provider webhook, then read back field by
// field through the API (listMessages, listChats) and through the `message.received` /
// `message.status_updated` events as a subscribed endpoint gets them: what the customer sent is
// what the business sees, and no kind is reduced to an empty text.
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { sha256Header } from '#server/lib/signatures.js';
import { contractViolations } from '#test/contract/validate.js';
import { tenant, type Tenant } from './inbox/support.js';

/** Meta's example digest (base64 `SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=`) in the API's one encoding, hex. */
const META_SHA256_HEX = '49f227634806293b0995459bc310b593e1400f41591efcf07e9bced335f41942';

const META = new URL('../../fakes/meta/', import.meta.url);
const SHARED = new URL('../../../../shared/meta-webhook-examples/', import.meta.url);
const openapi = JSON.parse(readFileSync(new URL('meta-openapi-webhook-examples.json', META), 'utf8')) as {
  examples: Record<string, { entry: { changes: { field: string; value: Record<string, any> }[] }[] }>;
};
const assembled = JSON.parse(readFileSync(new URL('meta-docs-assembled.json', META), 'utf8')) as {
  messages: Record<string, { message: Record<string, any> }>;
  statuses: Record<string, { status: Record<string, any> }>;
};

/** Meta's inbound-message examples by name, each one message of Meta's shape. */
const MESSAGES: Record<string, { message: Record<string, any>; contacts?: unknown[] }> = {};
for (const [name, payload] of Object.entries(openapi.examples)) {
  const change = payload.entry[0]!.changes[0]!;
  if (change.field === 'messages' && change.value.messages) MESSAGES[name] = { message: change.value.messages[0], contacts: change.value.contacts };
}
for (const [name, { message }] of Object.entries(assembled.messages)) MESSAGES[name] = { message };

const webhookDoc = JSON.parse(readFileSync(new URL('../../../generated/messaging/openapi.3.1.dereferenced.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020.default({ strict: false, allErrors: true });
addFormats.default(ajv);
const eventSchema = (type: string) => ajv.compile(webhookDoc.webhooks[type].post.requestBody.content['application/json'].schema);

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

interface Setup extends Tenant {
  endpointId: string;
}

async function setup(): Promise<Setup> {
  const t = await tenant(app);
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhook-endpoints',
    headers: t.headers,
    payload: { url: 'https://crm.example.com/hooks/chatapp', enabled_events: ['message.received', 'message.status_updated'] },
  });
  expect(res.statusCode).toBe(201);
  return { ...t, endpointId: res.json().id };
}

/** Meta's message addressed to the tenant's number, with a wamid of its own (Meta reuses ids across examples). */
function delivery(t: Tenant, message: Record<string, any>, contacts?: unknown[], extra: Record<string, unknown> = {}) {
  const m = { ...structuredClone(message), id: `${message.id}.${randomBytes(6).toString('hex')}` };
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '419561257915477',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: t.number.slice(1), phone_number_id: t.providerPnId },
              ...(contacts ? { contacts } : {}),
              messages: [m],
              ...extra,
            },
          },
        ],
      },
    ],
  };
}

async function post(body: object) {
  const raw = JSON.stringify(body);
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhook/chatapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, raw) },
    payload: raw,
  });
  expect([res.statusCode, res.json()]).toEqual([200, { received: true }]);
}

async function answer(t: Tenant, url: string, operationId: string) {
  const res = await app.inject({ method: 'GET', url, headers: t.headers });
  const body = res.json();
  const violations = await contractViolations('messaging', operationId, {
    status: res.statusCode,
    headers: res.headers as Record<string, string>,
    contentType: String(res.headers['content-type'] ?? '').split(';')[0]!,
    body,
    text: res.body,
  });
  expect(violations, `${operationId} answer breaks the contract`).toEqual([]);
  expect(res.statusCode).toBe(200);
  return body;
}

/** The message as the API and as the event show it, the chat's preview, and the contact. */
async function readBack(t: Setup, wamid: string) {
  const db = app.platform.store.db;
  const row = await db.selectFrom('messages').select(['id', 'contact_id']).where('provider_message_id', '=', wamid).executeTakeFirstOrThrow();
  const page = await answer(t, `/api/chatapp/messages?contact_id=${row.contact_id}`, 'listMessages');
  const message = page.data.find((m: { id: string }) => m.id === row.id);
  const chats = await answer(t, '/api/chatapp/chats', 'listChats');
  const chat = chats.data.find((c: { contact: { id: string } }) => c.contact.id === row.contact_id);
  const outbox = await db
    .selectFrom('outbox')
    .select('payload')
    .where('endpoint_id', '=', t.endpointId)
    .where('event_type', '=', 'message.received')
    .orderBy('created_at', 'desc')
    .execute();
  const events = outbox.map((o) => JSON.parse(o.payload)).filter((e) => e.data.message.id === row.id);
  expect(events).toHaveLength(1);
  const validate = eventSchema('message.received');
  expect(validate(events[0]), JSON.stringify(validate.errors)).toBe(true);
  const contact = await db.selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirstOrThrow();
  return { id: row.id, message, event: events[0].data, preview: chat.last_message.preview as string, contact };
}

/** Posts Meta's example `name` and reads it back; the API and the event must agree on the content. */
async function roundTrip(name: string) {
  const t = await setup();
  const { message, contacts } = MESSAGES[name]!;
  const body = delivery(t, message, contacts);
  await post(body);
  const wamid = body.entry[0]!.changes[0]!.value.messages[0].id;
  const back = await readBack(t, wamid);
  expect(back.event.message.content).toEqual(back.message.content);
  expect(back.event.message.type).toBe(back.message.type);
  expect(back.message).toMatchObject({ wamid, direction: 'inbound', status: 'received' });
  expect(back.preview).not.toBe('');
  return { ...back, t, source: message };
}

const downloadUrl = (id: string) => `${app.platform.config.publicUrl}/api/chatapp/messages/${id}/media`;

describe("Meta's webhook examples round-trip through the API and the events", () => {
  it('every example has a case below', () => {
    const covered = new Set([...Object.keys(CASES), 'Group Create Message', 'Group Settings Update', 'Group Remove Participants']);
    expect(Object.keys(MESSAGES).filter((n) => !covered.has(n))).toEqual([]);
    expect(Object.keys(openapi.examples).filter((n) => !covered.has(n))).toEqual([]);
  });

  it('the copies in test/fakes/meta hold what the shared files hold, when those are present', () => {
    for (const file of ['meta-openapi-webhook-examples.json', 'meta-docs-assembled.json']) {
      if (!existsSync(new URL(file, SHARED))) continue;
      expect(JSON.parse(readFileSync(new URL(file, META), 'utf8'))).toEqual(JSON.parse(readFileSync(new URL(file, SHARED), 'utf8')));
    }
  });

  const CASES: Record<string, () => Promise<void>> = {
    'Text Message': async () => {
      const r = await roundTrip('Text Message');
      expect(r.message.type).toBe('text');
      expect(r.message.content).toEqual({ text: 'Does it come in another color?' });
      expect(r.preview).toBe('Does it come in another color?');
      expect(r.event.contact).toMatchObject({ contact_no: '+16505551234', profile_name: 'Sheena Nelson' });
    },
    'Text Message with Context (Product Inquiry)': async () => {
      const r = await roundTrip('Text Message with Context (Product Inquiry)');
      expect(r.message.content).toEqual({
        text: 'Is this still available?',
        referred_product: { catalog_id: '194836987003835', product_retailer_id: 'di9ozbzfi4' },
      });
    },
    'Text Message from Click to WhatsApp Ad': async () => {
      const r = await roundTrip('Text Message from Click to WhatsApp Ad');
      const ad = r.source.referral;
      expect(r.message.content).toEqual({
        text: 'Hello! Can I get more info on this?',
        referral: {
          source_url: 'https://fb.me/3cr4Wqqkv',
          source_id: '120226305854810726',
          source_type: 'ad',
          headline: 'Chat with us',
          body: 'Summer Succulents are here!',
          media_type: 'image',
          image_url: ad.image_url,
          video_url: null,
          thumbnail_url: null,
          ctwa_clid: ad.ctwa_clid,
          welcome_message: 'Hi there! Let us know how we can help!',
        },
      });
    },
    'Reaction Message': async () => {
      const r = await roundTrip('Reaction Message');
      expect(r.message.type).toBe('reaction');
      // The reacted-to message was never stored here: its id is unknown.
      expect(r.message.content).toEqual({ reaction: { emoji: '👍', message_id: null } });
      expect(r.preview).toBe('👍');
    },
    'Image Message': async () => {
      const r = await roundTrip('Image Message');
      expect(r.message.content).toEqual({
        caption: 'Taj Mahal',
        media: {
          url: downloadUrl(r.id),
          mime_type: 'image/jpeg',
          filename: null,
          size_bytes: null,
          provider_media_id: '1003383421387256',
          sha256: META_SHA256_HEX,
        },
      });
      expect(r.preview).toBe('Taj Mahal');
    },
    'Location Message': async () => {
      const r = await roundTrip('Location Message');
      expect(r.message.content).toEqual({
        location: {
          latitude: 37.44221496582,
          longitude: -122.16165924072,
          name: 'Philz Coffee',
          address: '101 Forest Ave, Palo Alto, CA 94301',
          url: 'https://philzcoffee.com/',
        },
      });
      expect(r.preview).toBe('Location: Philz Coffee');
    },
    'Contact Sharing Message': async () => {
      const r = await roundTrip('Contact Sharing Message');
      expect(r.message.content).toEqual({
        contacts: [
          {
            name: { formatted_name: 'Lucía Gómez', first_name: 'Lucía', last_name: 'Gómez', middle_name: null, prefix: null, suffix: null },
            phones: [{ phone: '+1 (983) 555-2319', wa_id: '19835552319', type: 'MOBILE' }],
            emails: [],
            org: { company: 'Google', department: null, title: null },
            urls: [],
            addresses: [],
            birthday: null,
          },
        ],
      });
      expect(r.preview).toBe('Contact: Lucía Gómez');
    },
    'Unsupported Message': async () => {
      const r = await roundTrip('Unsupported Message');
      expect(r.message.type).toBe('unsupported');
      expect(r.message.content).toEqual({
        text: 'Unsupported message (unsupported)',
        errors: [{ code: 131051, title: 'Message type unknown', detail: 'Message type is currently not supported.' }],
      });
    },
    'Button Message': async () => {
      const r = await roundTrip('Button Message');
      expect(r.message.content).toEqual({ text: 'Unsubscribe', reply: { id: 'Unsubscribe', title: 'Unsubscribe' } });
    },
    'Interactive List Reply Message': async () => {
      const r = await roundTrip('Interactive List Reply Message');
      expect(r.message.content).toEqual({ reply: { id: 'priority_express', title: 'Priority Mail Express', description: 'Next Day to 2 Days' } });
      expect(r.preview).toBe('Priority Mail Express');
    },
    'Interactive Button Reply Message': async () => {
      const r = await roundTrip('Interactive Button Reply Message');
      expect(r.message.content).toEqual({ reply: { id: 'cancel-button', title: 'Cancel' } });
    },
    'Order Message': async () => {
      const r = await roundTrip('Order Message');
      expect(r.message.type).toBe('order');
      expect(r.message.content).toEqual({
        order: {
          catalog_id: '194836987003835',
          text: null,
          items: [
            { product_retailer_id: 'di9ozbzfi4', quantity: 2, item_price: 30, currency: 'USD' },
            { product_retailer_id: 'nqryix03ez', quantity: 1, item_price: 25, currency: 'USD' },
          ],
        },
      });
      expect(r.preview).toBe('Order: 3 items (USD 85.00)');
    },
    'System Message': async () => {
      const t = await setup();
      // The customer wrote from the old number first; the notice then moves the contact.
      await post(delivery(t, MESSAGES['Text Message']!.message, MESSAGES['Text Message']!.contacts));
      const db = app.platform.store.db;
      const before = await db.selectFrom('contacts').selectAll().where('workspace_id', '=', t.workspaceId).executeTakeFirstOrThrow();
      const body = delivery(t, MESSAGES['System Message']!.message);
      await post(body);
      const back = await readBack(t, body.entry[0]!.changes[0]!.value.messages[0].id);
      expect(back.message.type).toBe('system');
      expect(back.message.content).toEqual({
        text: 'User Sheena Nelson changed from 16505551234 to 12195555358',
        system: { type: 'user_changed_number', body: 'User Sheena Nelson changed from 16505551234 to 12195555358', wa_id: '12195555358' },
      });
      expect(back.event.message.content).toEqual(back.message.content);
      expect(back.contact.id).toBe(before.id);
      expect(back.contact.phone).toBe('+12195555358');
      expect(back.contact.previous_phones).toEqual([{ phone: '+16505551234', changed_at: expect.any(String) }]);
      expect(back.event.contact).toMatchObject({ id: before.id, contact_no: '+12195555358' });
      // A notice is not the customer writing: the window stays where their last message put it.
      expect(new Date(back.contact.last_inbound_at!).getTime()).toBe(new Date(before.last_inbound_at!).getTime());
      const contacts = await db.selectFrom('contacts').select('id').where('workspace_id', '=', t.workspaceId).execute();
      expect(contacts).toHaveLength(1);
    },
    'Audio Message': async () => {
      const r = await roundTrip('Audio Message');
      expect(r.message.content).toEqual({
        media: {
          url: downloadUrl(r.id),
          mime_type: 'audio/ogg; codecs=opus',
          filename: null,
          size_bytes: null,
          provider_media_id: '1003383421387257',
          sha256: META_SHA256_HEX,
          voice: true,
        },
      });
      expect(r.preview).toBe('[audio]');
    },
    'Video Message': async () => {
      const r = await roundTrip('Video Message');
      expect(r.message.content).toMatchObject({ caption: 'My vacation video', media: { mime_type: 'video/mp4', provider_media_id: '1003383421387258' } });
    },
    'Document Message': async () => {
      const r = await roundTrip('Document Message');
      expect(r.message.content).toEqual({
        caption: 'receipt.pdf',
        media: {
          url: downloadUrl(r.id),
          mime_type: 'application/pdf',
          filename: 'receipt.pdf',
          size_bytes: null,
          provider_media_id: '1003383421387259',
          sha256: META_SHA256_HEX,
        },
      });
    },
    'Sticker Message': async () => {
      const r = await roundTrip('Sticker Message');
      expect(r.message.content).toEqual({
        media: {
          url: downloadUrl(r.id),
          mime_type: 'image/webp',
          filename: null,
          size_bytes: null,
          provider_media_id: '1003383421387260',
          sha256: META_SHA256_HEX,
          animated: true,
        },
      });
    },
    'Flow (nfm_reply) Message': async () => {
      const r = await roundTrip('Flow (nfm_reply) Message');
      expect(r.message.type).toBe('form_response');
      expect(r.message.content).toEqual({
        form_response: {
          flow_token: 'AQAAAAACS5FpgQ_cAAAAAD0QI3s.',
          response: { flow_token: 'AQAAAAACS5FpgQ_cAAAAAD0QI3s.', optional_param1: '<value1>', optional_param2: '<value2>' },
        },
      });
    },
  };

  for (const [name, run] of Object.entries(CASES)) it(name, run);

  it('the group examples (other change fields) are acknowledged and change nothing', async () => {
    const t = await setup();
    for (const name of ['Group Create Message', 'Group Settings Update', 'Group Remove Participants']) {
      const payload = structuredClone(openapi.examples[name]!) as any;
      payload.entry[0].changes[0].value.metadata.phone_number_id = t.providerPnId;
      await post(payload);
    }
    const rows = await app.platform.store.db.selectFrom('messages').select('id').where('workspace_id', '=', t.workspaceId).execute();
    expect(rows).toEqual([]);
  });

  it('a contact card with every vCard part keeps all of them', async () => {
    const t = await setup();
    const card = {
      name: { formatted_name: 'Dr. Ana Maria Silva Jr.', first_name: 'Ana', middle_name: 'Maria', last_name: 'Silva', prefix: 'Dr.', suffix: 'Jr.' },
      phones: [{ phone: '+351 912 000 004', type: 'CELL' }],
      emails: [{ email: 'ana@example.com', type: 'WORK' }, { type: 'HOME' }],
      org: { company: 'Acme', department: 'Sales', title: 'Head of sales' },
      urls: [{ url: 'https://acme.example', type: 'WORK' }],
      addresses: [{ street: 'Rua 1', city: 'Lisboa', zip: '1000-001', country: 'Portugal', country_code: 'PT', type: 'WORK' }],
      birthday: '1990-04-01',
    };
    const body = delivery(t, { ...MESSAGES['Contact Sharing Message']!.message, contacts: [card] });
    await post(body);
    const back = await readBack(t, body.entry[0]!.changes[0]!.value.messages[0].id);
    expect(back.message.content.contacts).toEqual([
      {
        name: { formatted_name: 'Dr. Ana Maria Silva Jr.', first_name: 'Ana', last_name: 'Silva', middle_name: 'Maria', prefix: 'Dr.', suffix: 'Jr.' },
        phones: [{ phone: '+351 912 000 004', wa_id: null, type: 'CELL' }],
        emails: [{ email: 'ana@example.com', type: 'WORK' }],
        org: { company: 'Acme', department: 'Sales', title: 'Head of sales' },
        urls: [{ url: 'https://acme.example', type: 'WORK' }],
        addresses: [{ street: 'Rua 1', city: 'Lisboa', state: null, zip: '1000-001', country: 'Portugal', country_code: 'PT', type: 'WORK' }],
        birthday: '1990-04-01',
      },
    ]);
  });

  it('a number change to a number another contact has leaves both contacts as they are', async () => {
    const t = await setup();
    const text = MESSAGES['Text Message']!;
    await post(delivery(t, text.message, text.contacts));
    await post(delivery(t, { ...text.message, from: '12195555358' }, [{ profile: { name: 'Other' }, wa_id: '12195555358' }]));
    await post(delivery(t, MESSAGES['System Message']!.message));
    const phones = await app.platform.store.db
      .selectFrom('contacts')
      .select(['phone', 'previous_phones'])
      .where('workspace_id', '=', t.workspaceId)
      .orderBy('phone')
      .execute();
    expect(phones).toEqual([
      { phone: '+12195555358', previous_phones: [] },
      { phone: '+16505551234', previous_phones: [] },
    ]);
  });
});

describe("Meta's status examples: conversation and pricing kept", () => {
  async function outbound(t: Tenant) {
    const db = app.platform.store.db;
    const contact = await db
      .insertInto('contacts')
      .values({ id: newId('ct'), workspace_id: t.workspaceId, phone: '+16505551234' })
      .onConflict((oc) => oc.columns(['workspace_id', 'phone']).doUpdateSet((eb) => ({ phone: eb.ref('excluded.phone') })))
      .returning('id')
      .executeTakeFirstOrThrow();
    const row = {
      id: newId('msg'),
      workspace_id: t.workspaceId,
      phone_number_id: t.pnId,
      contact_id: contact.id,
      direction: 'outbound' as const,
      type: 'text',
      content: JSON.stringify({ text: 'Your order shipped' }),
      provider_message_id: `wamid.${randomBytes(12).toString('hex')}`,
      status: 'accepted',
      error: null,
    };
    await db.insertInto('messages').values(row).execute();
    return row;
  }
  function statusDelivery(t: Tenant, wamid: string, status: Record<string, unknown>) {
    const body = delivery(t, MESSAGES['Text Message']!.message) as any;
    const value = body.entry[0].changes[0].value;
    delete value.messages;
    value.statuses = [{ ...status, id: wamid }];
    return body;
  }

  it('sent, delivered, read, failed and played: states, errors, conversation and pricing through the API and the event', async () => {
    const t = await setup();
    const m = await outbound(t);
    const s = assembled.statuses;
    for (const name of ['sent', 'delivered', 'read']) await post(statusDelivery(t, m.provider_message_id, s[name]!.status));
    const page = await answer(t, `/api/chatapp/messages?contact_id=${m.contact_id}`, 'listMessages');
    const message = page.data.find((x: { id: string }) => x.id === m.id);
    const conversation = { id: '6ceb9d929c1a2e4a8a3b2e1d5e0f7a41', origin_type: 'utility', expires_at: new Date(1750350180 * 1000).toISOString() };
    const pricing = { billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' };
    // The latest report wins: `delivered` came without the expiration, `read` with no billing at all.
    expect(message).toMatchObject({ status: 'read', pricing, conversation: { id: conversation.id, origin_type: 'utility' } });
    const events = (
      await app.platform.store.db
        .selectFrom('outbox')
        .select('payload')
        .where('endpoint_id', '=', t.endpointId)
        .where('event_type', '=', 'message.status_updated')
        .orderBy('created_at')
        .execute()
    ).map((o) => JSON.parse(o.payload));
    const validate = eventSchema('message.status_updated');
    for (const e of events) expect(validate(e), JSON.stringify(validate.errors)).toBe(true);
    expect(events.map((e) => e.data.status)).toEqual(['sent', 'delivered', 'read']);
    expect(events[0].data).toMatchObject({ conversation, pricing });
    expect(events[1].data).toMatchObject({ conversation: { id: conversation.id, origin_type: 'utility', expires_at: null }, pricing });
    expect(events[2].data.conversation).toBeUndefined();

    const failed = await outbound(t);
    await post(statusDelivery(t, failed.provider_message_id, s.failed!.status));
    await post(statusDelivery(t, failed.provider_message_id, s.played!.status)); // a state we do not model: ignored
    const after = await answer(t, `/api/chatapp/messages?contact_id=${failed.contact_id}`, 'listMessages');
    expect(after.data.find((x: { id: string }) => x.id === failed.id)).toMatchObject({
      status: 'failed',
      error: { code: 131026, title: 'Message undeliverable', detail: 'Message Undeliverable.' },
    });
  });
});
