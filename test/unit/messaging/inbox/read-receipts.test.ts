// The provider learns what the business did: marking a chat read sends `status: read` for the
// customer's latest message, and the typing indicator goes with a read receipt, as the Cloud API
// takes them (the exact bodies, against the fake Cloud API on 127.0.0.1); the sandbox phone shows
// the ticks and "typing…" until the reply.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { sha256Header } from '#server/lib/signatures.js';
import { cloudTenant, customerWrites, PROBLEMS, sandbox, storeTemplate, tenant, type Tenant } from './support.js';

const CUSTOMER = '4915112345678';
let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
  t = await cloudTenant(app);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** The customer's text through the signed webhook, as Meta delivers it. */
async function customerWrote(wamid: string, text: string, from = CUSTOMER, agoMs = 0) {
  const payload = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: t.number.slice(1), phone_number_id: t.providerPnId },
              contacts: [{ profile: { name: 'Lena' }, wa_id: from }],
              messages: [{ from, id: wamid, timestamp: String(Math.floor((Date.now() - agoMs) / 1000)), type: 'text', text: { body: text } }],
            },
          },
        ],
      },
    ],
  });
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhook/chatapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, payload) },
    payload,
  });
  expect(res.statusCode).toBe(200);
}

const post = (as: Tenant, url: string) => app.inject({ method: 'POST', url, headers: as.headers });
const chatOf = async (as: Tenant, phone: string) =>
  (await app.inject({ method: 'GET', url: '/api/chatapp/chats', headers: as.headers })).json().data.find((c: any) => c.contact.contact_no === phone);
const receipts = () => fake.requests.filter((r) => r.path === `/${t.providerPnId}/messages`);

describe('Cloud API', () => {
  it('mark read: POST /{phone-number-id}/messages {messaging_product, status: read, message_id} of the latest inbound message', async () => {
    // Minutes apart, and before the next tests' messages: Meta's timestamps are in seconds, and two
    // messages of one second have no order.
    await customerWrote('wamid.RR.1', 'Hi', CUSTOMER, 180_000);
    await customerWrote('wamid.RR.2', 'Are you open today?', CUSTOMER, 120_000);
    const chat = await chatOf(t, `+${CUSTOMER}`);
    expect(chat.unread_count).toBe(2);
    const res = await post(t, `/api/chatapp/chats/${chat.id}/read`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().unread_count).toBe(0);
    expect(receipts()).toHaveLength(1);
    expect(receipts()[0]!.method).toBe('POST');
    expect(receipts()[0]!.headers.authorization).toMatch(/^Bearer /);
    expect(receipts()[0]!.body).toEqual({ messaging_product: 'whatsapp', status: 'read', message_id: 'wamid.RR.2' });
  });

  it('typing indicator: the read receipt with typing_indicator {type: text}; the chat is read', async () => {
    await customerWrote('wamid.RR.3', 'Can I book for 4?', CUSTOMER, 60_000);
    const chat = await chatOf(t, `+${CUSTOMER}`);
    expect(chat.unread_count).toBe(1);
    const res = await post(t, `/api/chatapp/chats/${chat.id}/typing`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: chat.id, unread_count: 0 });
    expect(receipts().map((r) => r.body)).toEqual([
      { messaging_product: 'whatsapp', status: 'read', message_id: 'wamid.RR.3', typing_indicator: { type: 'text' } },
    ]);
  });

  it('the provider failing: mark read still reads the chat here (logged); typing answers the provider problem', async () => {
    await customerWrote('wamid.RR.4', 'Hello?');
    const chat = await chatOf(t, `+${CUSTOMER}`);
    fake.fail({ status: 400, body: { error: { message: '(#100) Invalid parameter', type: 'OAuthException', code: 100 } } }, { times: 2 });
    const read = await post(t, `/api/chatapp/chats/${chat.id}/read`);
    expect(read.statusCode).toBe(200);
    expect(read.json().unread_count).toBe(0);
    const typing = await post(t, `/api/chatapp/chats/${chat.id}/typing`);
    // Meta refused the request itself (code 100): the provider's problem, as a send would answer it.
    expect(typing.statusCode).toBe(422);
    expect(typing.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, provider_code: 100 });
    expect(receipts()).toHaveLength(2);
  });

  it('typing is refused without a message to answer (422) and outside the 24-hour window (422 outside-window), with no provider call', async () => {
    await customerWrote('wamid.RR.old', 'Old question', '4915112345699', 25 * 3600_000);
    const old = await chatOf(t, '+4915112345699');
    const late = await post(t, `/api/chatapp/chats/${old.id}/typing`);
    expect(late.statusCode).toBe(422);
    expect(late.json().type).toBe(`${PROBLEMS}outside-window`);
    // A chat the business opened with a template: nothing inbound to mark read.
    await storeTemplate(app, t, { name: 'hello_world', components: [{ type: 'BODY', text: 'Hello!' }] });
    const send = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: '+4915112345600', chatapp_phone_number: t.pnId, messageType: 'template', template: { name: 'hello_world', language: 'en_US' } },
    });
    expect(send.statusCode, send.body).toBe(201);
    const opened = await chatOf(t, '+4915112345600');
    fake.reset();
    const none = await post(t, `/api/chatapp/chats/${opened.id}/typing`);
    expect(none.statusCode).toBe(422);
    expect(none.json().type).toBe(`${PROBLEMS}unprocessable`);
    expect((await post(t, `/api/chatapp/chats/${opened.id}/read`)).statusCode).toBe(200);
    expect(receipts()).toEqual([]);
  });

  it("another workspace's chat: 404 for typing, nothing sent", async () => {
    const other = await tenant(app);
    await customerWrote('wamid.RR.5', 'Hi again');
    const chat = await chatOf(t, `+${CUSTOMER}`);
    fake.reset();
    expect((await post(other, `/api/chatapp/chats/${chat.id}/typing`)).statusCode).toBe(404);
    expect((await post(other, '/api/chatapp/chats/chat_00000000000000000000/typing')).statusCode).toBe(404);
    expect(receipts()).toEqual([]);
  });
});

describe('sandbox', () => {
  it('the sandbox phone shows its messages read and the business typing until the reply', async () => {
    const s = await tenant(app);
    const phone = '+4915112345601';
    await customerWrites(app, s, phone, 'First');
    await customerWrites(app, s, phone, 'Second');
    const chat = await chatOf(s, phone);
    const state = () => sandbox(app).phoneState(s.providerPnId, phone, null);
    expect(state()).toEqual({ readThrough: null, typing: false });
    expect((await post(s, `/api/chatapp/chats/${chat.id}/read`)).statusCode).toBe(200);
    const latest = await app.platform.store.db
      .selectFrom('messages')
      .select('created_at')
      .where('chat_id', '=', chat.id)
      .where('direction', '=', 'inbound')
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    expect(state()).toEqual({ readThrough: new Date(latest.created_at), typing: false });
    expect((await post(s, `/api/chatapp/chats/${chat.id}/typing`)).statusCode).toBe(200);
    expect(state().typing).toBe(true);
    // The reply ends the indicator, as on a real phone.
    const reply = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: s.headers,
      payload: { contact_no: phone, chatapp_phone_number: s.pnId, messageType: 'text', message: 'Hi!' },
    });
    expect(reply.statusCode, reply.body).toBe(201);
    const sent = await app.platform.store.db.selectFrom('messages').select('created_at').where('id', '=', reply.json().id).executeTakeFirstOrThrow();
    expect(sandbox(app).phoneState(s.providerPnId, phone, new Date(sent.created_at)).typing).toBe(false);
  });
});
