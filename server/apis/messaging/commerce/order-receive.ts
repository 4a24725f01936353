// receiveOrderWebhook: a storefront's order event, authenticated only by the base64
// HMAC-SHA256 of the raw body under the webhook's secret. A verified event is logged once: the
// log's unique keys (the platform's delivery id; the order id with the event) make a retry or a
// repeated status change a `duplicate` that sends nothing. The mapped template goes out through
// `deliver`, the same path as POST /api/chatapp/send (templates are allowed outside the window).
// The payload is read from the signed bytes with large integers kept exact (lib/json-lossless.ts).
import { createHmac } from 'node:crypto';
import type { components, operations } from '#generated/messaging/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { parseJsonLossless } from '#server/lib/json-lossless.js';
import { HttpProblem } from '#server/lib/problems.js';
import { sameText } from '#server/lib/signatures.js';
import type { Platform } from '#server/platform.js';
import type { OrderPlatform, VariableMapping } from '#server/store/schema/commerce.js';
import { deliver } from '../outbound/deliver.js';
import { findTemplate } from '../templates/lookup.js';
import { fillTemplate } from './order-mapping.js';
import { customerPhone, eventOf, normaliseOrder, type NormalisedOrder, type OrderEvent, type OrderFields } from './order-fields.js';
import { SIGNATURE_HEADERS, type OrderWebhookRow } from './order-webhooks.js';

type Receipt = components['schemas']['OrderWebhookReceipt'];
type Action = Receipt['action'];

const TOPIC_HEADERS: Record<OrderPlatform, string> = { shopify: 'x-shopify-topic', woocommerce: 'x-wc-webhook-topic', custom: 'x-webhook-event' };
const DELIVERY_HEADERS: Record<OrderPlatform, string> = { shopify: 'x-shopify-webhook-id', woocommerce: 'x-wc-webhook-delivery-id', custom: 'x-webhook-id' };

/** The platform headers the contract declares, each at most MAX_HEADER characters (its `maxLength`). */
const PLATFORM_HEADERS = [
  ...Object.values(SIGNATURE_HEADERS).map((name) => name.toLowerCase()),
  ...Object.values(TOPIC_HEADERS),
  ...Object.values(DELIVERY_HEADERS),
];
const MAX_HEADER = 256;

function header(request: { headers: Record<string, unknown> }, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' && v !== '' ? v.slice(0, 200) : undefined;
}

/** Constant-time check of a base64 HMAC-SHA256 of the raw body, compared as text. */
export function verifyBase64Hmac(given: string | undefined, secret: string, rawBody: Buffer): boolean {
  if (!given || !/^[A-Za-z0-9+/]{43}=$/.test(given.trim())) return false;
  return sameText(given.trim(), createHmac('sha256', secret).update(rawBody).digest('base64'));
}

export const receiveOrderWebhook: Handler<operations['receiveOrderWebhook']> = async (request) => {
  const platform = request.server.platform;
  const db = platform.store.db;
  const { id } = request.params;
  const hook = await db.selectFrom('order_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  if (!hook) throw new HttpProblem(404, 'not-found', `No order webhook ${id}.`);
  const tooLong = PLATFORM_HEADERS.filter((name) => String(request.headers[name] ?? '').length > MAX_HEADER);
  if (tooLong.length)
    throw new HttpProblem(400, 'validation', 'A platform header is longer than the contract allows.', {
      errors: tooLong.map((name) => ({ pointer: `/header/${name}`, detail: `at most ${MAX_HEADER} characters` })),
    });
  if (!request.rawBody) {
    // Only JSON keeps its raw bytes; WooCommerce's unsigned ping when a webhook is saved is a form post.
    const body = request.body as Record<string, unknown>;
    if (hook.platform === 'woocommerce' && typeof body?.webhook_id === 'string' && Object.keys(body).length === 1) {
      return { received: true, event: null, action: 'ping', message_id: null };
    }
    throw new HttpProblem(415, 'unsupported-media-type', "Order events are JSON; a form body is accepted only as WooCommerce's ping (webhook_id=…).");
  }
  const signatureHeader = SIGNATURE_HEADERS[hook.platform];
  if (!verifyBase64Hmac(header(request, signatureHeader.toLowerCase()), platform.secrets.decrypt(hook.secret_enc), request.rawBody)) {
    const missing = header(request, signatureHeader.toLowerCase()) === undefined;
    throw new HttpProblem(401, 'invalid-signature', missing ? `${signatureHeader} is missing.` : `${signatureHeader} does not match the request body.`);
  }
  const topic = header(request, TOPIC_HEADERS[hook.platform]);
  // Read again from the signed bytes, keeping 18-digit ids exact (JSON.parse rounds them).
  const payload = parseJsonLossless(request.rawBody.toString('utf8'));
  const event = eventOf(hook.platform, topic, payload);
  const outcome = await handleEvent(platform, hook, {
    topic,
    event,
    deliveryId: header(request, DELIVERY_HEADERS[hook.platform]) ?? null,
    payload,
  });
  return { received: true, event, action: outcome.action, message_id: outcome.messageId };
};

interface Delivery {
  topic: string | undefined;
  event: OrderEvent | null;
  deliveryId: string | null;
  payload: unknown;
}

async function handleEvent(platform: Platform, hook: OrderWebhookRow, d: Delivery): Promise<{ action: Action; messageId: string | null }> {
  const db = platform.store.db;
  const now = platform.now();
  const order = normaliseOrder(hook.platform, d.payload);
  await db.updateTable('order_webhooks').set({ last_received_at: now }).where('id', '=', hook.id).execute();
  const base = {
    order_webhook_id: hook.id,
    workspace_id: hook.workspace_id,
    platform_order_id: order.orderId,
    topic: d.topic ?? null,
    event: d.event,
    received_at: now,
  };
  const orderKey = d.event && order.orderId ? [order.orderId, d.event, order.refundId].filter(Boolean).join(':') : null;
  // The claim: a row only one delivery of this order's event can insert.
  const claim = await db
    .insertInto('order_webhook_receipts')
    .values({ ...base, delivery_id: d.deliveryId, order_key: orderKey, action: 'processing', customer: null, detail: null, message_id: null })
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!claim) {
    await db
      .insertInto('order_webhook_receipts')
      .values({ ...base, delivery_id: null, order_key: null, action: 'duplicate', customer: null, detail: d.deliveryId, message_id: null })
      .execute();
    return { action: 'duplicate', messageId: null };
  }
  const settle = async (action: Action, extra: { messageId?: string; detail?: string; customer?: OrderFields } = {}) => {
    await db
      .updateTable('order_webhook_receipts')
      .set({ action, message_id: extra.messageId ?? null, detail: extra.detail ?? null, customer: extra.customer ? JSON.stringify(extra.customer) : null })
      .where('id', '=', claim.id)
      .execute();
    return { action, messageId: extra.messageId ?? null };
  };
  try {
    const fields = await withEarlierCustomer(platform, hook, order);
    const phone = customerPhone(order, hook.default_country);
    if (phone) fields['customer.phone'] = phone;
    const customer = fields;
    if (!d.event) return await settle('not_mapped', { customer, detail: `topic ${d.topic ?? '(none)'} is not an order event` });
    const mapping = await db
      .selectFrom('order_webhook_mappings')
      .selectAll()
      .where('order_webhook_id', '=', hook.id)
      .where('event', '=', d.event)
      .executeTakeFirst();
    if (!mapping?.enabled) return await settle('not_mapped', { customer });
    if (!phone) return await settle('no_recipient', { customer });
    const template = await findTemplate(db, hook.workspace_id, { id: mapping.template_id });
    if (template?.status !== 'APPROVED')
      return await settle('failed', { customer, detail: `template ${mapping.template_id} is ${template?.status ?? 'gone'}` });
    const filled = fillTemplate(template, mapping.variables as VariableMapping[], fields);
    if ('missing' in filled) return await settle('missing_field', { customer, detail: `no value for ${filled.missing}` });
    const sender = await senderOf(platform, hook);
    if (!sender) return await settle('failed', { customer, detail: 'the business account has no phone number' });
    try {
      const sent = await deliver(platform, hook.workspace_id, {
        contact_no: phone,
        chatapp_phone_number: sender,
        messageType: 'template',
        template: filled.template,
      });
      return await settle('template_queued', { customer, messageId: sent.id });
    } catch (error) {
      // A provider outage or rate limit: the platform's retry should send it, so the claim goes.
      if (error instanceof HttpProblem && (error.status === 429 || error.status === 502 || error.status === 503)) throw error;
      // Refused for good, or a timeout whose outcome is unknown (never re-sent blindly).
      if (error instanceof HttpProblem) return await settle('failed', { customer, detail: error.problem.detail ?? error.problem.title });
      throw error;
    }
  } catch (error) {
    await db.deleteFrom('order_webhook_receipts').where('id', '=', claim.id).execute();
    throw error;
  }
}

/** A refund names only its order: the customer comes from an earlier event of that order. */
async function withEarlierCustomer(platform: Platform, hook: OrderWebhookRow, order: NormalisedOrder): Promise<OrderFields> {
  if (order.phones.length || !order.orderId) return { ...order.fields };
  const earlier = await platform.store.db
    .selectFrom('order_webhook_receipts')
    .select('customer')
    .where('order_webhook_id', '=', hook.id)
    .where('platform_order_id', '=', order.orderId)
    .where('customer', 'is not', null)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  const known = (earlier?.customer ?? {}) as OrderFields;
  if (known['customer.phone']) order.phones.push(known['customer.phone']);
  return { ...known, ...order.fields };
}

/** The webhook's number, else the account's first number still connected. */
async function senderOf(platform: Platform, hook: OrderWebhookRow): Promise<string | null> {
  if (hook.phone_number_id) return hook.phone_number_id;
  const row = await platform.store.db
    .selectFrom('phone_numbers')
    .select('id')
    .where('business_account_id', '=', hook.business_account_id)
    .where('status', '!=', 'DISCONNECTED')
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.id ?? null;
}
