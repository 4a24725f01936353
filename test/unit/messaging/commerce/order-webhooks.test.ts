// Order webhooks: create (secret shown once, stored encrypted), map a template (every variable
// mapped, approved, same account), and receive signed Shopify / WooCommerce / custom order
// events: the mapped template reaches the customer once, whatever is replayed; anything
// unsigned or wrongly signed is a 401 that changes nothing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { cloudTenant, PROBLEMS, sandbox, storeTemplate, tenant, type Tenant } from '../inbox/support.js';
import { verifyBase64Hmac } from '#server/apis/messaging/commerce/order-receive.js';
import { deliver, orderTemplate, orderWebhook, PAID_VARIABLES, shopifyHeaders, shopifyOrder, sign, wooHeaders, wooOrder } from './support.js';

let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;
let other: Tenant;
let cloud: Tenant;
const sent: { to: string; message: any }[] = [];

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({
    env: { GRAPH_API_URL: fake.baseUrl, PUBLIC_URL: 'https://api.chatapp.example', RATE_LIMIT_IP_PER_MINUTE: '10000', RATE_LIMIT_PER_MINUTE: '10000' },
  });
  t = await tenant(app);
  other = await tenant(app);
  cloud = await cloudTenant(app);
  const provider = sandbox(app);
  const original = provider.sendMessage.bind(provider);
  provider.sendMessage = async (...args: Parameters<typeof original>) => {
    sent.push({ to: args[1], message: args[2] });
    return original(...args);
  };
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => {
  sent.length = 0;
  fake.reset();
});

const db = () => app.platform.store.db;
const post = (as: Tenant, url: string, payload: unknown) => app.inject({ method: 'POST', url, headers: as.headers, payload: payload as object });
const receipts = (hookId: string) => db().selectFrom('order_webhook_receipts').selectAll().where('order_webhook_id', '=', hookId).orderBy('id').execute();
const messageCount = async (workspaceId: string) =>
  Number(
    (
      await db()
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('createOrderWebhook', () => {
  it('answers the URL, the signature header and the secret once; the secret is stored encrypted', async () => {
    const res = await post(t, '/api/ecommerce-webhook/create', { platform: 'shopify', name: 'Smile Shop', waba_id: t.wabaId, default_country: 'PT' });
    expect(res.statusCode, res.body).toBe(201);
    const hook = res.json();
    expect(hook).toMatchObject({
      platform: 'shopify',
      name: 'Smile Shop',
      waba_id: t.wabaId,
      phone_number_id: null,
      default_country: 'PT',
      signature_header: 'X-Shopify-Hmac-Sha256',
      mappings: [],
      last_received_at: null,
    });
    expect(hook.url).toBe(`https://api.chatapp.example/api/ecommerce-webhook/${hook.id}/orders`);
    expect(hook.secret).toMatch(/^owhsec_[0-9A-Za-z]{32}$/);
    expect(hook.secret_last4).toBe(hook.secret.slice(-4));
    const row = await db().selectFrom('order_webhooks').selectAll().where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.secret_enc).not.toContain(hook.secret);
    expect(app.platform.secrets.decrypt(row.secret_enc)).toBe(hook.secret);
    // Mapping answers the webhook without the secret.
    const template = await orderTemplate(app, t, { name: 'order_paid_view' });
    const mapped = await post(t, `/api/ecommerce-webhook/${hook.id}/map-template`, {
      event: 'order.paid',
      template_id: template.id,
      language: 'en_US',
      variables: PAID_VARIABLES,
    });
    expect(mapped.statusCode, mapped.body).toBe(200);
    expect(mapped.json().secret).toBeUndefined();
    expect(mapped.json().mappings).toEqual([
      expect.objectContaining({ event: 'order.paid', template_id: template.id, enabled: true, variables: PAID_VARIABLES }),
    ]);
  });

  it('a secret given (Shopify shows its own): used as given, WooCommerce header named', async () => {
    const res = await post(t, '/api/ecommerce-webhook/create', {
      platform: 'woocommerce',
      name: 'Woo',
      waba_id: t.wabaId,
      secret: 'my-own-signing-secret-123',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ secret: 'my-own-signing-secret-123', secret_last4: '-123', signature_header: 'X-WC-Webhook-Signature' });
  });

  it("B3 another workspace's account: 404 naming waba_id, nothing stored", async () => {
    const before = await db().selectFrom('order_webhooks').select('id').execute();
    const res = await post(other, '/api/ecommerce-webhook/create', { platform: 'shopify', name: 'x', waba_id: t.wabaId });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}not-found`, errors: [{ pointer: '/body/waba_id' }] });
    expect(await db().selectFrom('order_webhooks').select('id').execute()).toHaveLength(before.length);
  });

  it("B3 another workspace's phone number: 404 naming phone_number_id", async () => {
    const res = await post(other, '/api/ecommerce-webhook/create', { platform: 'shopify', name: 'x', waba_id: other.wabaId, phone_number_id: t.pnId });
    expect(res.statusCode).toBe(404);
    expect(res.json().errors[0].pointer).toBe('/body/phone_number_id');
  });

  it('B1 unknown platform, unknown field, short secret, bad country: 400', async () => {
    for (const body of [
      { platform: 'magento', name: 'x', waba_id: t.wabaId },
      { platform: 'shopify', name: 'x', waba_id: t.wabaId, extra: 1 },
      { platform: 'shopify', name: 'x', waba_id: t.wabaId, secret: 'short' },
      { platform: 'shopify', name: 'x', waba_id: t.wabaId, default_country: 'XX' },
      { platform: 'shopify', name: '', waba_id: t.wabaId },
    ]) {
      const res = await post(t, '/api/ecommerce-webhook/create', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().type).toBe(`${PROBLEMS}validation`);
    }
  });

  it('J2 NUL in the name: 400, not a database error', async () => {
    const res = await post(t, '/api/ecommerce-webhook/create', { platform: 'shopify', name: 'a\u0000b', waba_id: t.wabaId });
    expect(res.statusCode).toBe(400);
  });
});

describe('mapOrderWebhookTemplate', () => {
  let hookId: string;
  let templateId: string;
  beforeAll(async () => {
    hookId = (await post(t, '/api/ecommerce-webhook/create', { platform: 'shopify', name: 'Map', waba_id: t.wabaId })).json().id;
    templateId = (await orderTemplate(app, t, { name: 'order_paid_map' })).id;
  });
  const map = (body: Record<string, unknown>, as = t, id = hookId) =>
    post(as, `/api/ecommerce-webhook/${id}/map-template`, {
      event: 'order.paid',
      template_id: templateId,
      language: 'en_US',
      variables: PAID_VARIABLES,
      ...body,
    });

  it('a variable without a mapping: 422 naming it', async () => {
    const res = await map({ variables: PAID_VARIABLES.slice(0, 1) });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, errors: [{ pointer: '/body/variables', detail: 'no mapping for body.2' }] });
    expect(res.json().detail).toBe(`Template ${templateId} has 3 body variables; 1 is mapped.`);
  });

  it('the URL button variable unmapped: 422 naming button.0', async () => {
    const res = await map({ variables: PAID_VARIABLES.slice(0, 3) });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].detail).toBe('no mapping for button.0');
  });

  it('a variable the template does not have: 422 naming the target', async () => {
    const res = await map({ variables: [...PAID_VARIABLES, { target: 'body.4', source: 'order.id' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0]).toEqual({ pointer: '/body/variables/4/target', detail: 'the template has no variable body.4' });
  });

  it('a variable mapped twice: 400', async () => {
    const res = await map({ variables: [...PAID_VARIABLES, { target: 'body.1', source: 'order.id' }] });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/variables/4/target');
  });

  it('an unknown order field or malformed target: 400 from the contract', async () => {
    expect((await map({ variables: [{ target: 'body.1', source: 'order.secret' }] })).statusCode).toBe(400);
    expect((await map({ variables: [{ target: 'footer.1', source: 'order.id' }] })).statusCode).toBe(400);
  });

  it('a template not approved: 422', async () => {
    const pending = await orderTemplate(app, t, { name: 'order_paid_pending', status: 'PENDING' });
    const res = await map({ template_id: pending.id });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/template_id');
  });

  it("another language than the template's: 422 naming language", async () => {
    const res = await map({ language: 'pt_BR' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/language');
  });

  it('an authentication template: 422 (its variable is a one-time code)', async () => {
    const otp = await storeTemplate(app, t, {
      name: 'otp_code',
      category: 'AUTHENTICATION',
      components: [{ type: 'BODY', add_security_recommendation: true }],
    });
    const res = await map({ template_id: otp.id, variables: [] });
    expect(res.statusCode).toBe(422);
  });

  it("B3 another workspace's template: 404; another workspace's webhook: 404", async () => {
    const theirs = await orderTemplate(app, other, { name: 'order_paid_theirs' });
    const res = await map({ template_id: theirs.id });
    expect(res.statusCode).toBe(404);
    expect(res.json().errors[0].pointer).toBe('/body/template_id');
    const hook = await map({}, other);
    const unknown = await map({}, other, 'owh_0000000000000000');
    expect(hook.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(hook.json().type).toBe(unknown.json().type);
  });

  it('mapping the same event again replaces it', async () => {
    expect((await map({})).statusCode).toBe(200);
    const res = await map({ enabled: false });
    expect(res.statusCode).toBe(200);
    expect(res.json().mappings).toHaveLength(1);
    expect(res.json().mappings[0].enabled).toBe(false);
  });
});

describe('receiveOrderWebhook from Shopify', () => {
  it('a signed orders/paid sends the mapped template to the customer, once; a replay is a duplicate', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const headers = shopifyHeaders(hook.secret, raw, 'orders/paid', 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043');
    const res = await deliver(app, hook.id, raw, headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ received: true, event: 'order.paid', action: 'template_queued' });
    expect(res.json().message_id).toMatch(/^msg_/);
    expect(sent).toHaveLength(1);
    expect(sent[0].to).toBe('+351912345678');
    expect(sent[0].message.template.name).toBe(hook.template.name);
    expect(sent[0].message.template.components).toEqual([
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'Maria' },
          { type: 'text', text: '#1042' },
          { type: 'text', text: '€42.50' },
        ],
      },
      { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: '5512345678901' }] },
    ]);
    const message = await db().selectFrom('messages').selectAll().where('id', '=', res.json().message_id).executeTakeFirstOrThrow();
    expect(message.workspace_id).toBe(t.workspaceId);

    const replay = await deliver(app, hook.id, raw, headers);
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toMatchObject({ action: 'duplicate', message_id: null });
    // The same order's paid event again under a new delivery id (a second "paid" status save): not sent again.
    const again = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw, 'orders/paid', 'another-delivery'));
    expect(again.json().action).toBe('duplicate');
    expect(sent).toHaveLength(1);
    const log = await receipts(hook.id);
    expect(log.map((r) => r.action)).toEqual(['template_queued', 'duplicate', 'duplicate']);
    expect(log[0]).toMatchObject({ platform_order_id: '5512345678901', event: 'order.paid', topic: 'orders/paid', message_id: res.json().message_id });
    const row = await db().selectFrom('order_webhooks').select('last_received_at').where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.last_received_at).not.toBeNull();
  });

  it('an 18-digit order id sent as a JSON number is kept digit for digit (logged, and in the URL button)', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder({ id: 'ID' })).replace('"id":"ID"', '"id":820982911946154508');
    expect(raw).toContain('"id":820982911946154508');
    const res = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw, 'orders/paid', 'big-id-delivery'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().action).toBe('template_queued');
    expect(sent.at(-1)!.message.template.components.at(-1)).toEqual({
      type: 'button',
      sub_type: 'url',
      index: 0,
      parameters: [{ type: 'text', text: '820982911946154508' }],
    });
    expect((await receipts(hook.id))[0]!.platform_order_id).toBe('820982911946154508');
  });

  it('E5 the same delivery twice at once: one send, the other a duplicate', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder({ id: 70 }));
    const headers = shopifyHeaders(hook.secret, raw, 'orders/paid', 'concurrent-1');
    const answers = await Promise.all([deliver(app, hook.id, raw, headers), deliver(app, hook.id, raw, headers), deliver(app, hook.id, raw, headers)]);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(answers.map((r) => r.json().action).sort()).toEqual(['duplicate', 'duplicate', 'template_queued']);
    expect(sent).toHaveLength(1);
  });

  it('a disabled mapping sends nothing: not_mapped', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const res = await post(t, `/api/ecommerce-webhook/${hook.id}/map-template`, {
      event: 'order.paid',
      template_id: hook.template.id,
      language: 'en_US',
      variables: PAID_VARIABLES,
      enabled: false,
    });
    expect(res.statusCode).toBe(200);
    const raw = JSON.stringify(shopifyOrder({ id: 71 }));
    expect((await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw))).json().action).toBe('not_mapped');
    expect(sent).toHaveLength(0);
  });

  it('E1 a wrong signature: 401 invalid-signature, nothing sent or recorded', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const res = await deliver(app, hook.id, raw, { ...shopifyHeaders(hook.secret, raw), 'x-shopify-hmac-sha256': sign('not-the-secret', raw) });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}invalid-signature`, detail: 'X-Shopify-Hmac-Sha256 does not match the request body.' });
    expect(sent).toHaveLength(0);
    expect(await receipts(hook.id)).toHaveLength(0);
  });

  it('H1 a platform header over 256 characters: 400 naming it (as the contract states), nothing recorded', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const res = await deliver(app, hook.id, raw, { ...shopifyHeaders(hook.secret, raw), 'x-shopify-topic': 'o'.repeat(257) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}validation` });
    expect(JSON.stringify(res.json().errors)).toContain('x-shopify-topic');
    expect(sent).toHaveLength(0);
    expect(await receipts(hook.id)).toHaveLength(0);
  });

  it('E1 every other 43rd character of the signature, even one that decodes to the same bytes: refused', () => {
    const raw = JSON.stringify(shopifyOrder());
    const good = sign('s'.repeat(32), raw);
    expect(verifyBase64Hmac(good, 's'.repeat(32), Buffer.from(raw))).toBe(true);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const edits = [...alphabet].filter((c) => c !== good[42]).map((c) => `${good.slice(0, 42)}${c}=`);
    expect(edits).toHaveLength(63);
    for (const bad of edits) expect(verifyBase64Hmac(bad, 's'.repeat(32), Buffer.from(raw)), bad).toBe(false);
  });

  it('E1 a missing signature: 401 naming the header', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const res = await deliver(app, hook.id, shopifyOrder(), { 'x-shopify-topic': 'orders/paid' });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toBe('X-Shopify-Hmac-Sha256 is missing.');
    expect(await receipts(hook.id)).toHaveLength(0);
  });

  it('E2 a stale body (signed, then changed): 401', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const headers = shopifyHeaders(hook.secret, raw);
    const res = await deliver(app, hook.id, JSON.stringify(shopifyOrder({ total_price: '0.01' })), headers);
    expect(res.statusCode).toBe(401);
    // Re-serialised with other spacing: the bytes differ, so it does not verify either.
    const spaced = await deliver(app, hook.id, JSON.stringify(JSON.parse(raw), null, 2), headers);
    expect(spaced.statusCode).toBe(401);
    expect(sent).toHaveLength(0);
  });

  it("E1 WooCommerce's header on a Shopify webhook: 401", async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const res = await deliver(app, hook.id, raw, wooHeaders(hook.secret, raw));
    expect(res.statusCode).toBe(401);
  });

  it("another webhook's secret: 401", async () => {
    const one = await orderWebhook(app, t, 'shopify');
    const two = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    expect((await deliver(app, two.id, raw, shopifyHeaders(one.secret, raw))).statusCode).toBe(401);
  });

  it('an unknown webhook id: 404', async () => {
    const raw = JSON.stringify(shopifyOrder());
    const res = await deliver(app, 'owh_0000000000000000', raw, shopifyHeaders('x'.repeat(20), raw));
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
  });

  it('B1 a body that is not a JSON object: 400', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    expect((await deliver(app, hook.id, '[1,2]', shopifyHeaders(hook.secret, '[1,2]'))).statusCode).toBe(400);
    expect((await deliver(app, hook.id, '{"id":', shopifyHeaders(hook.secret, '{"id":'))).statusCode).toBe(400);
  });

  it('an event without a mapping, a topic that is no event: 200 not_mapped, nothing sent', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const created = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw, 'orders/create'));
    expect(created.json()).toMatchObject({ event: 'order.created', action: 'not_mapped', message_id: null });
    const updated = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw, 'orders/updated'));
    expect(updated.json()).toMatchObject({ event: null, action: 'not_mapped' });
    expect(sent).toHaveLength(0);
  });

  it('an order without a usable phone: 200 no_recipient', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder({ id: 77, customer: { first_name: 'Ana', phone: 'call me' } }));
    const res = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw));
    expect(res.json()).toMatchObject({ action: 'no_recipient' });
    expect(sent).toHaveLength(0);
  });

  it('an empty field without fallback: 200 missing_field; with a fallback the fallback is sent', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const noName = JSON.stringify(shopifyOrder({ id: 78, name: null, order_number: null, customer: { phone: '+351912345670' } }));
    const res = await deliver(app, hook.id, noName, shopifyHeaders(hook.secret, noName));
    expect(res.json()).toMatchObject({ action: 'missing_field' });
    expect(sent).toHaveLength(0);
    const noFirstName = JSON.stringify(shopifyOrder({ id: 79, customer: { phone: '+351912345670' } }));
    const ok = await deliver(app, hook.id, noFirstName, shopifyHeaders(hook.secret, noFirstName));
    expect(ok.json().action).toBe('template_queued');
    expect(sent[0].message.template.components[0].parameters[0]).toEqual({ type: 'text', text: 'there' });
  });

  it('J7 order values are sent literally, never expanded', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder({ id: 80, customer: { first_name: '{{2}} ${process.env.X}', phone: '+351912345671' } }));
    await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw));
    expect(sent[0].message.template.components[0].parameters[0].text).toBe('{{2}} ${process.env.X}');
  });

  it('refunds/create: the customer comes from an earlier event of the order', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    const template = await orderTemplate(app, t, { name: 'order_refunded', components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} was refunded.' }] });
    const mapped = await post(t, `/api/ecommerce-webhook/${hook.id}/map-template`, {
      event: 'order.refunded',
      template_id: template.id,
      language: 'en_US',
      variables: [
        { target: 'body.1', source: 'customer.first_name' },
        { target: 'body.2', source: 'order.number' },
      ],
    });
    expect(mapped.statusCode, mapped.body).toBe(200);
    const order = JSON.stringify(shopifyOrder({ id: 81 }));
    await deliver(app, hook.id, order, shopifyHeaders(hook.secret, order, 'orders/create'));
    const refund = JSON.stringify({ id: 9901, order_id: 81, refund_line_items: [], transactions: [] });
    const res = await deliver(app, hook.id, refund, shopifyHeaders(hook.secret, refund, 'refunds/create'));
    expect(res.json()).toMatchObject({ event: 'order.refunded', action: 'template_queued' });
    expect(sent.at(-1)!.to).toBe('+351912345678');
    expect(sent.at(-1)!.message.template.components[0].parameters.map((p: { text: string }) => p.text)).toEqual(['Maria', '#1042']);
  });

  it('a template no longer approved: 200 failed, nothing sent, the event not retried', async () => {
    const hook = await orderWebhook(app, t, 'shopify');
    await db().updateTable('message_templates').set({ status: 'PAUSED' }).where('id', '=', hook.template.id).execute();
    const raw = JSON.stringify(shopifyOrder({ id: 82 }));
    const res = await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw));
    expect(res.json()).toMatchObject({ action: 'failed', message_id: null });
    expect(sent).toHaveLength(0);
  });
});

describe('receiveOrderWebhook from WooCommerce', () => {
  it('the ping when the webhook is saved (form body webhook_id=…): 200 ping, nothing recorded', async () => {
    const hook = await orderWebhook(app, t, 'woocommerce');
    const res = await app.inject({
      method: 'POST',
      url: `/api/ecommerce-webhook/${hook.id}/orders`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'webhook_id=12',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: true, event: null, action: 'ping', message_id: null });
    expect(await receipts(hook.id)).toHaveLength(0);
  });

  it('any other form body: 415, nothing recorded', async () => {
    const hook = await orderWebhook(app, t, 'woocommerce');
    const res = await app.inject({
      method: 'POST',
      url: `/api/ecommerce-webhook/${hook.id}/orders`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'id=1&status=processing',
    });
    expect(res.statusCode).toBe(415);
    const shopify = await orderWebhook(app, t, 'shopify');
    const ping = await app.inject({
      method: 'POST',
      url: `/api/ecommerce-webhook/${shopify.id}/orders`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'webhook_id=12',
    });
    expect(ping.statusCode).toBe(415);
  });

  it('a signed order.updated in processing sends the order.paid template to the national number, read in the billing country', async () => {
    const hook = await orderWebhook(app, cloud, 'woocommerce');
    const raw = JSON.stringify(wooOrder());
    const res = await deliver(app, hook.id, raw, wooHeaders(hook.secret, raw));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ event: 'order.paid', action: 'template_queued' });
    const sends = fake.requests.filter((r) => r.path.endsWith('/messages'));
    expect(sends).toHaveLength(1);
    expect(sends[0].body).toMatchObject({ to: '351912345679', type: 'template' });
    expect(sends[0].body.template.components[0].parameters.map((p: { text: string }) => p.text)).toEqual(['João', '#727', '€29.35']);
    // WooCommerce fires order.updated on every save: the paid event of order 727 is sent once.
    const resave = await deliver(app, hook.id, raw, wooHeaders(hook.secret, raw));
    expect(resave.json().action).toBe('duplicate');
    expect(fake.requests.filter((r) => r.path.endsWith('/messages'))).toHaveLength(1);
  });

  it('a bad signature: 401 and nothing sent', async () => {
    const hook = await orderWebhook(app, t, 'woocommerce');
    const raw = JSON.stringify(wooOrder());
    const res = await deliver(app, hook.id, raw, { ...wooHeaders(hook.secret, raw), 'x-wc-webhook-signature': 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toBe('X-WC-Webhook-Signature does not match the request body.');
    expect(sent).toHaveLength(0);
  });

  it('a provider outage: 502 and nothing recorded, so the platform retry sends it', async () => {
    const hook = await orderWebhook(app, cloud, 'woocommerce');
    const raw = JSON.stringify(wooOrder({ id: 728, number: '728' }));
    fake.fail('server-error', { path: /\/messages$/, times: 1 });
    const res = await deliver(app, hook.id, raw, wooHeaders(hook.secret, raw, 'order.updated', 'd-1'));
    expect(res.statusCode).toBe(502);
    expect(res.json().type).toBe(`${PROBLEMS}provider-error`);
    expect(await receipts(hook.id)).toHaveLength(0);
    const retry = await deliver(app, hook.id, raw, wooHeaders(hook.secret, raw, 'order.updated', 'd-1'));
    expect(retry.json().action).toBe('template_queued');
  });
});

describe('receiveOrderWebhook from a custom platform', () => {
  it('the normalised fields themselves, the event in X-Webhook-Event', async () => {
    const hook = await orderWebhook(app, t, 'custom', { default_country: 'DE' });
    const raw = JSON.stringify({ order: { id: 'A-1', number: '#A1', total: '€10.00' }, customer: { first_name: 'Lena', phone: '0151 23456789' } });
    const res = await deliver(app, hook.id, raw, { 'x-webhook-hmac-sha256': sign(hook.secret, raw), 'x-webhook-event': 'order.paid', 'x-webhook-id': 'c-1' });
    expect(res.json()).toMatchObject({ event: 'order.paid', action: 'template_queued' });
    expect(sent[0].to).toBe('+4915123456789');
    expect(sent[0].message.template.components[0].parameters.map((p: { text: string }) => p.text)).toEqual(['Lena', '#A1', '€10.00']);
  });
});

describe('isolation', () => {
  it("a delivery never sends from another workspace; message rows stay in the webhook's workspace", async () => {
    const before = await messageCount(other.workspaceId);
    const hook = await orderWebhook(app, t, 'shopify');
    const raw = JSON.stringify(shopifyOrder({ id: 90 }));
    await deliver(app, hook.id, raw, shopifyHeaders(hook.secret, raw));
    expect(await messageCount(other.workspaceId)).toBe(before);
  });
});
