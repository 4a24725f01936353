// POST /api/chatapp/send against the fake Cloud API on 127.0.0.1: the wire body Meta receives,
// its failures (bad-inputs F-8 rate limit, bad-inputs F-9 timeout, bad-inputs F-10 131047, invalid numbers), and no call at all
// when our own checks refuse (bad-inputs H15, B3).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { sha256Header } from '#server/lib/signatures.js';
import { cloudCustomerWrote, cloudTenant, counts, PROBLEMS, storeTemplate, tenant, type Tenant } from './support.js';
import { eventually } from '#test/support/eventually.js';

const CUSTOMER = '+4915112345678';
let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  // The provider's timeout shortened from 15 s: the hanging-provider tests wait it out.
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl }, overrides: { timeouts: { providerMs: 1_500 } } });
  t = await cloudTenant(app);
  await cloudCustomerWrote(app, t, CUSTOMER);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const send = (body: Record<string, unknown>, as: Tenant = t) =>
  app.inject({ method: 'POST', url: '/api/chatapp/send', headers: as.headers, payload: { contact_no: CUSTOMER, chatapp_phone_number: as.number, ...body } });
const sends = () => fake.requests.filter((r) => /\/(messages|marketing_messages)$/.test(r.path));
const row = (id: string) => app.platform.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const lastRow = () =>
  app.platform.store.db
    .selectFrom('messages')
    .selectAll()
    .where('workspace_id', '=', t.workspaceId)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();

describe('sendMessage on the Cloud API', () => {
  it("text: one POST /{phone-number-id}/messages with Meta's body, bearer token; wamid stored", async () => {
    const res = await send({ messageType: 'text', message: 'Hello from Acme' });
    expect(res.statusCode, res.body).toBe(201);
    expect(sends()).toHaveLength(1);
    const call = sends()[0];
    expect(call.path).toBe(`/${t.providerPnId}/messages`);
    expect(call.headers.authorization).toMatch(/^Bearer /);
    expect(call.body).toMatchObject({ messaging_product: 'whatsapp', to: CUSTOMER.slice(1), type: 'text', text: { body: 'Hello from Acme' } });
    expect((await row(res.json().id)).provider_message_id).toBe(res.json().wamid);
  });

  it('template with variables, a URL button value and a coupon: components as Meta expects; J7 values literal', async () => {
    await storeTemplate(app, t, {
      name: 'coupon_offer',
      components: [
        { type: 'BODY', text: 'Hi {{1}}, use {{2}}', example: { body_text: [['Lena', 'X']] } },
        {
          type: 'BUTTONS',
          buttons: [
            { type: 'COPY_CODE', example: 'SAVE10' },
            { type: 'URL', text: 'Shop', url: 'https://shop.example/{{1}}', example: ['https://shop.example/a'] },
          ],
        },
      ],
    });
    const res = await send({
      messageType: 'template',
      template: {
        name: 'coupon_offer',
        language: 'en_US',
        body: ['{{1}}', '${process.env.X}'],
        buttons: [
          { type: 'copy_code', index: 0, coupon_code: 'SAVE10' },
          { type: 'url', index: 1, text: 'summer sale' },
        ],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = sends()[0].body;
    expect(body.type).toBe('template');
    expect(body.template.name).toBe('coupon_offer');
    expect(body.template.components).toEqual([
      {
        type: 'body',
        parameters: [
          { type: 'text', text: '{{1}}' },
          { type: 'text', text: '${process.env.X}' },
        ],
      },
      { type: 'button', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code', coupon_code: 'SAVE10' }] },
      { type: 'button', sub_type: 'url', index: 1, parameters: [{ type: 'text', text: 'summer%20sale' }] },
    ]);
  });

  it('template values past the provider caps (body 1,024, header 60, variable 1,024): refused naming the field, no provider call', async () => {
    await storeTemplate(app, t, {
      name: 'order_lines',
      components: [
        { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['#1'] } },
        { type: 'BODY', text: 'Your items: {{1}}', example: { body_text: [['1× socks']] } },
      ],
    });
    const template = (header: string, body: string) => ({
      messageType: 'template',
      template: { name: 'order_lines', language: 'en_US', header: { type: 'text', text: header }, body: [body] },
    });
    const longBody = await send(template('#1', 'i'.repeat(1013)));
    expect(longBody.statusCode, longBody.body).toBe(422);
    expect(longBody.json().errors[0]).toMatchObject({ pointer: '/body/template/body' });
    expect(longBody.json().detail).toMatch(/1025 characters.*1024/);
    const longHeader = await send(template('#'.repeat(55), 'socks'));
    expect(longHeader.statusCode, longHeader.body).toBe(422);
    expect(longHeader.json().errors[0]).toMatchObject({ pointer: '/body/template/header/text' });
    const longValue = await send(template('#1', 'v'.repeat(1025)));
    expect(longValue.statusCode, longValue.body).toBe(400);
    expect(JSON.stringify(longValue.json().errors)).toContain('/body/template/body/0');
    // At the cap exactly: sent.
    expect((await send(template('#'.repeat(54), 'i'.repeat(1012)))).statusCode).toBe(201);
    expect(sends()).toHaveLength(1);
  });

  it('a MARKETING template on an onboarded account: POST /marketing_messages with product_policy', async () => {
    await storeTemplate(app, t, { name: 'weekend_sale', category: 'MARKETING', components: [{ type: 'BODY', text: 'Sale' }] });
    await app.platform.store.db
      .insertInto('marketing_messages_settings')
      .values({
        business_account_id: t.wabaId,
        workspace_id: t.workspaceId,
        enabled: true,
        product_policy: 'CLOUD_API_FALLBACK',
        activity_sharing: true,
        onboarding_status: 'ONBOARDED',
        updated_at: new Date(),
      })
      .onConflict((oc) => oc.column('business_account_id').doUpdateSet({ onboarding_status: 'ONBOARDED' }))
      .execute();
    const res = await send({ messageType: 'template', template: { name: 'weekend_sale', language: 'en_US' } });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().route).toBe('marketing_messages');
    expect(sends()[0].path).toBe(`/${t.providerPnId}/marketing_messages`);
    expect(sends()[0].body).toMatchObject({ product_policy: 'CLOUD_API_FALLBACK', message_activity_sharing: true });
  });

  it('F-8 provider 429 with Retry-After 30: our 429 rate-limited with Retry-After, message failed with the code', async () => {
    fake.fail('rate-limit', { path: /messages$/, retryAfterSec: 30 });
    const res = await send({ messageType: 'text', message: 'Hi' });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('30');
    expect(res.json().type).toBe(`${PROBLEMS}rate-limited`);
    expect(sends()).toHaveLength(1);
    const r = await lastRow();
    expect(r.status).toBe('failed');
    expect((r.error as any).code).toBe(130429);
  });

  it('F-10 provider 131047 though our window check passed: 422 outside-window, message failed with the code, no retry', async () => {
    fake.fail('outside-window', { path: /messages$/ });
    const res = await send({ messageType: 'text', message: 'Hi' });
    expect(res.statusCode).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(sends()).toHaveLength(1);
    const r = await lastRow();
    expect(r.status).toBe('failed');
    expect((r.error as any).code).toBe(131047);
    expect(r.failed_at).not.toBeNull();
  });

  it('invalid number at the provider (131026): 422, message failed', async () => {
    fake.fail('invalid-number', { path: /messages$/ });
    const res = await send({ messageType: 'text', message: 'Hi' });
    expect(res.statusCode).toBe(422);
    expect((await lastRow()).status).toBe('failed');
  });

  it('F-9 the provider never answers: 504 provider-error after the timeout, message unknown, not re-sent', async () => {
    fake.fail('hang', { path: /messages$/ });
    const res = await send({ messageType: 'text', message: 'Hi' });
    expect(res.statusCode).toBe(504);
    expect(res.json().type).toBe(`${PROBLEMS}provider-error`);
    expect(sends()).toHaveLength(1);
    const r = await lastRow();
    expect(r.status).toBe('unknown');
    expect(r.provider_message_id).toBeNull();
    // Meta did send it: its status webhook carries our id back and settles the row.
    const status = {
      id: 'wamid.settled-after-timeout',
      status: 'delivered',
      timestamp: String(Math.floor(Date.now() / 1000)),
      recipient_id: CUSTOMER.slice(1),
      biz_opaque_callback_data: r.id,
    };
    const payload = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'x',
          changes: [
            {
              field: 'messages',
              value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550100100', phone_number_id: t.providerPnId }, statuses: [status] },
            },
          ],
        },
      ],
    });
    const hook = await app.inject({
      method: 'POST',
      url: '/api/webhook/chatapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, payload) },
      payload,
    });
    expect(hook.statusCode).toBe(200);
    const settled = await row(r.id);
    expect(settled.status).toBe('delivered');
    expect(settled.provider_message_id).toBe('wamid.settled-after-timeout');
  }, 60_000);

  it("E7 a status that overtakes the provider's answer settles the pending row through the callback data", async () => {
    fake.fail('hang', { path: /messages$/ });
    const sending = send({ messageType: 'text', message: 'Status first' });
    const pending = await eventually(
      async () => {
        const r = await lastRow();
        return r.status === 'pending' && r.direction === 'outbound' && r;
      },
      { within: 5_000, what: 'the pending row' },
    );
    expect(pending, 'the send recorded its row before calling the provider').toBeDefined();
    const status = {
      id: 'wamid.overtook-answer',
      status: 'sent',
      timestamp: String(Math.floor(Date.now() / 1000)),
      recipient_id: CUSTOMER.slice(1),
      biz_opaque_callback_data: pending!.id,
    };
    const payload = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'x',
          changes: [
            {
              field: 'messages',
              value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550100100', phone_number_id: t.providerPnId }, statuses: [status] },
            },
          ],
        },
      ],
    });
    const hook = await app.inject({
      method: 'POST',
      url: '/api/webhook/chatapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, payload) },
      payload,
    });
    expect(hook.statusCode).toBe(200);
    expect(await row(pending!.id)).toMatchObject({ status: 'sent', provider_message_id: 'wamid.overtook-answer' });
    // The call then times out; settling only touches `pending` rows, so the status stays.
    expect((await sending).statusCode).toBe(504);
    expect(await row(pending!.id)).toMatchObject({ status: 'sent', provider_message_id: 'wamid.overtook-answer' });
  }, 60_000);

  it('H15 outside the window: 422 before any provider call (0 requests at the fake)', async () => {
    await cloudCustomerWrote(app, t, '+4915112349999', 24 * 3600_000 + 1000);
    const before = await counts(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: '+4915112349999', chatapp_phone_number: t.number, messageType: 'text', message: 'Hi' },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(fake.requests).toHaveLength(0);
    expect(await counts(app)).toEqual(before);
  });

  it('B3 another workspace sending from this number: 404, 0 provider requests', async () => {
    const other = await tenant(app);
    const res = await send({ messageType: 'text', message: 'Hi', chatapp_phone_number: t.number }, other);
    expect(res.statusCode).toBe(404);
    expect(fake.requests).toHaveLength(0);
  });
});
