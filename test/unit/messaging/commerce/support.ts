// Fixtures of the order-webhook tests: signed storefront deliveries (base64 HMAC-SHA256 of the
// raw body, as Shopify and WooCommerce sign), sample orders in each platform's shape, and an
// approved order template with body variables and a URL button.
import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { storeTemplate, type Tenant } from '../inbox/support.js';

export const sign = (secret: string, raw: string) => createHmac('sha256', secret).update(raw).digest('base64');

export const ORDER_TEMPLATE = {
  name: 'order_paid',
  components: [
    { type: 'BODY', text: 'Hi {{1}}, order {{2}} ({{3}}) is paid.', example: { body_text: [['Maria', '#1042', '€42.50']] } },
    { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Track', url: 'https://shop.example/orders/{{1}}', example: ['https://shop.example/orders/1'] }] },
  ],
};

export const PAID_VARIABLES = [
  { target: 'body.1', source: 'customer.first_name', fallback: 'there' },
  { target: 'body.2', source: 'order.number' },
  { target: 'body.3', source: 'order.total' },
  { target: 'button.0', source: 'order.id' },
];

export function shopifyOrder(overrides: Record<string, unknown> = {}) {
  return {
    id: 5512345678901,
    name: '#1042',
    order_number: 1042,
    email: 'maria@example.com',
    phone: null,
    currency: 'EUR',
    total_price: '42.50',
    subtotal_price: '39.00',
    financial_status: 'paid',
    created_at: '2026-11-23T10:00:00+01:00',
    order_status_url: 'https://shop.example/orders/4c2f/authenticate?key=9a7b',
    customer: { first_name: 'Maria', last_name: 'Lopez', phone: '+351912345678' },
    shipping_address: { address1: 'Rua A 1', city: 'Lisboa', zip: '1000-001', country: 'Portugal', country_code: 'PT', phone: null },
    line_items: [
      { title: 'Sonic toothbrush', quantity: 1, price: '39.00' },
      { title: 'Floss', quantity: 2, price: '1.75' },
    ],
    payment_gateway_names: ['shopify_payments'],
    ...overrides,
  };
}

export function wooOrder(overrides: Record<string, unknown> = {}) {
  return {
    id: 727,
    number: '727',
    status: 'processing',
    currency: 'EUR',
    total: '29.35',
    date_created: '2026-11-23T10:11:12',
    payment_method_title: 'Direct bank transfer',
    billing: { first_name: 'João', last_name: 'Silva', email: 'joao@example.com', phone: '912 345 679', country: 'PT' },
    shipping: { first_name: 'João', last_name: 'Silva', address_1: 'Rua B 2', city: 'Porto', postcode: '4000-001', country: 'PT' },
    line_items: [{ name: 'Mug', quantity: 2 }],
    ...overrides,
  };
}

export async function orderTemplate(app: FastifyInstance, t: Tenant, overrides: Partial<Parameters<typeof storeTemplate>[2]> = {}) {
  return storeTemplate(app, t, { ...ORDER_TEMPLATE, ...overrides });
}

/** Creates an order webhook and maps `order.paid` to the order template; answers its id and secret. */
export async function orderWebhook(app: FastifyInstance, t: Tenant, platform: 'shopify' | 'woocommerce' | 'custom', extra: Record<string, unknown> = {}) {
  const template = await orderTemplate(app, t, { name: `order_paid_${platform}_${Math.random().toString(36).slice(2, 8)}` });
  const created = await app.inject({
    method: 'POST',
    url: '/api/ecommerce-webhook/create',
    headers: t.headers,
    payload: { platform, name: 'Shop', waba_id: t.wabaId, ...extra },
  });
  if (created.statusCode !== 201) throw new Error(`create failed: ${created.body}`);
  const hook = created.json();
  const mapped = await app.inject({
    method: 'POST',
    url: `/api/ecommerce-webhook/${hook.id}/map-template`,
    headers: t.headers,
    payload: { event: 'order.paid', template_id: template.id, language: 'en_US', variables: PAID_VARIABLES },
  });
  if (mapped.statusCode !== 200) throw new Error(`map failed: ${mapped.body}`);
  return { id: hook.id as string, secret: hook.secret as string, template };
}

/** POSTs `payload` to the webhook's URL, signed with `secret` in the platform's header unless told otherwise. */
export function deliver(app: FastifyInstance, id: string, payload: unknown, headers: Record<string, string>) {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return app.inject({ method: 'POST', url: `/api/ecommerce-webhook/${id}/orders`, headers: { 'content-type': 'application/json', ...headers }, payload: raw });
}

export function shopifyHeaders(secret: string, raw: string, topic = 'orders/paid', webhookId = `d-${Math.random()}`) {
  return { 'x-shopify-hmac-sha256': sign(secret, raw), 'x-shopify-topic': topic, 'x-shopify-webhook-id': webhookId };
}

export function wooHeaders(secret: string, raw: string, topic = 'order.updated', deliveryId = String(Math.floor(Math.random() * 1e9))) {
  return { 'x-wc-webhook-signature': sign(secret, raw), 'x-wc-webhook-topic': topic, 'x-wc-webhook-delivery-id': deliveryId };
}
