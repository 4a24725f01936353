// A storefront's order payload turned into the contract's normalised order fields
// (OrderWebhookField), the same for every platform, and its topic into an order event.
// Shopify: the Admin API order (refunds/create carries a refund, whose order is named by
// order_id). WooCommerce: the REST API v3 order. Custom: the fields themselves, by path
// (`{"order": {"number": "#1"}, "customer": {"phone": "+351…"}}`).
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/min';
import type { components } from '#generated/messaging/types.js';
import { toE164 } from '#server/lib/phone.js';
import type { OrderPlatform } from '#server/store/schema/commerce.js';

type S = components['schemas'];
export type OrderField = S['OrderWebhookField'];
export type OrderEvent = S['OrderWebhookEvent'];
export type OrderFields = Partial<Record<OrderField, string>>;

export interface NormalisedOrder {
  /** The platform's order id, when the payload names one. */
  orderId: string | null;
  /** A refund's own id (Shopify refunds/create): each refund of an order is its own event. */
  refundId: string | null;
  fields: OrderFields;
  /** Phone numbers as written, best first, with the countries to read national forms in. */
  phones: string[];
  countries: string[];
}

type Json = Record<string, any>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | undefined => {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t.slice(0, 1000);
};
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : []);

/** `€42.50`; the amount as given when the currency is unknown. */
export function formatMoney(amount: unknown, currency: string | undefined): string | undefined {
  const text = str(amount);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) return text;
  try {
    return currency ? new Intl.NumberFormat('en', { style: 'currency', currency }).format(value) : text;
  } catch {
    return `${text} ${currency}`;
  }
}

const joined = (parts: (string | undefined)[], sep = ', ') => {
  const kept = parts.filter((p): p is string => p !== undefined);
  return kept.length ? kept.join(sep) : undefined;
};
const date = (v: unknown) => str(v)?.match(/^\d{4}-\d{2}-\d{2}/)?.[0];

function items(lines: Json[], name: string): { count?: string; summary?: string } {
  if (!lines.length) return {};
  const count = lines.reduce((n, l) => n + (Number.isFinite(Number(l.quantity)) ? Number(l.quantity) : 1), 0);
  return { count: String(count), summary: joined(lines.map((l) => (str(l[name]) ? `${Number(l.quantity) || 1}× ${str(l[name])}` : undefined))) };
}

function clean(fields: Record<string, string | undefined>): OrderFields {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as OrderFields;
}

function shopify(o: Json): NormalisedOrder {
  const customer = obj(o.customer);
  const shipping = obj(o.shipping_address);
  const billing = obj(o.billing_address);
  const fulfillment = list(o.fulfillments).at(-1) ?? {};
  const currency = str(o.currency);
  const first = str(customer.first_name) ?? str(billing.first_name) ?? str(shipping.first_name);
  const last = str(customer.last_name) ?? str(billing.last_name) ?? str(shipping.last_name);
  const lines = items(list(o.line_items), 'title');
  return {
    orderId: str(o.id) ?? null,
    refundId: null,
    fields: clean({
      'order.number': str(o.name) ?? (str(o.order_number) ? `#${str(o.order_number)}` : undefined),
      'order.id': str(o.id),
      'order.total': formatMoney(o.total_price, currency),
      'order.subtotal': formatMoney(o.subtotal_price, currency),
      'order.currency': currency,
      'order.status_url': str(o.order_status_url),
      'order.date': date(o.created_at),
      'order.item_count': lines.count,
      'order.items_summary': lines.summary,
      'customer.first_name': first,
      'customer.last_name': last,
      'customer.full_name': joined([first, last], ' '),
      'customer.email': str(o.email) ?? str(o.contact_email) ?? str(customer.email),
      'shipping.address': joined([str(shipping.address1), str(shipping.address2), joined([str(shipping.zip), str(shipping.city)], ' '), str(shipping.country)]),
      'shipping.city': str(shipping.city),
      'shipping.carrier': str(fulfillment.tracking_company),
      'shipping.tracking_number': str(fulfillment.tracking_number) ?? str(list(fulfillment.tracking_numbers)[0]),
      'shipping.tracking_url': str(fulfillment.tracking_url),
      'payment.method': Array.isArray(o.payment_gateway_names) ? joined(o.payment_gateway_names.map(str)) : undefined,
    }),
    phones: [customer.phone, o.phone, shipping.phone, billing.phone].map(str).filter((p): p is string => p !== undefined),
    countries: [str(shipping.country_code), str(billing.country_code), str(obj(customer.default_address).country_code)].filter(
      (c): c is string => c !== undefined,
    ),
  };
}

function woocommerce(o: Json): NormalisedOrder {
  const billing = obj(o.billing);
  const shipping = obj(o.shipping);
  const currency = str(o.currency);
  const first = str(billing.first_name) ?? str(shipping.first_name);
  const last = str(billing.last_name) ?? str(shipping.last_name);
  const lines = items(list(o.line_items), 'name');
  const number = str(o.number) ?? str(o.id);
  return {
    orderId: str(o.id) ?? null,
    refundId: null,
    fields: clean({
      'order.number': number ? `#${number}` : undefined,
      'order.id': str(o.id),
      'order.total': formatMoney(o.total, currency),
      'order.subtotal': undefined,
      'order.currency': currency,
      'order.date': date(o.date_created_gmt) ?? date(o.date_created),
      'order.item_count': lines.count,
      'order.items_summary': lines.summary,
      'customer.first_name': first,
      'customer.last_name': last,
      'customer.full_name': joined([first, last], ' '),
      'customer.email': str(billing.email),
      'shipping.address': joined([
        str(shipping.address_1),
        str(shipping.address_2),
        joined([str(shipping.postcode), str(shipping.city)], ' '),
        str(shipping.country),
      ]),
      'shipping.city': str(shipping.city),
      'payment.method': str(o.payment_method_title),
    }),
    phones: [billing.phone, shipping.phone].map(str).filter((p): p is string => p !== undefined),
    countries: [str(billing.country), str(shipping.country)].filter((c): c is string => c !== undefined),
  };
}

/** Custom platforms send the normalised fields themselves, by path. */
function custom(o: Json): NormalisedOrder {
  const fields: Record<string, string | undefined> = {};
  for (const [group, values] of Object.entries(o)) {
    for (const [key, value] of Object.entries(obj(values))) fields[`${group}.${key}`] = str(value);
  }
  const known = clean(fields);
  return { orderId: known['order.id'] ?? null, refundId: null, fields: known, phones: known['customer.phone'] ? [known['customer.phone']] : [], countries: [] };
}

export function normaliseOrder(platform: OrderPlatform, payload: unknown): NormalisedOrder {
  const o = obj(payload);
  if (platform === 'woocommerce') return woocommerce(o);
  if (platform === 'custom') return custom(o);
  // A Shopify refund names its order; its customer comes from an earlier event of that order.
  if (o.order_id !== undefined && o.refund_line_items !== undefined) {
    return { orderId: str(o.order_id) ?? null, refundId: str(o.id) ?? null, fields: clean({ 'order.id': str(o.order_id) }), phones: [], countries: [] };
  }
  return shopify(o);
}

const SHOPIFY_TOPICS: Record<string, OrderEvent> = {
  'orders/create': 'order.created',
  'orders/paid': 'order.paid',
  'orders/fulfilled': 'order.fulfilled',
  'orders/cancelled': 'order.cancelled',
  'refunds/create': 'order.refunded',
};
const WOO_STATUSES: Record<string, OrderEvent> = {
  processing: 'order.paid',
  completed: 'order.fulfilled',
  cancelled: 'order.cancelled',
  refunded: 'order.refunded',
};
const EVENTS = new Set<string>(['order.created', 'order.paid', 'order.fulfilled', 'order.cancelled', 'order.refunded']);

/** The event of a delivery; null for topics that are not one (Shopify's orders/updated, …). */
export function eventOf(platform: OrderPlatform, topic: string | undefined, payload: unknown): OrderEvent | null {
  if (!topic) return null;
  if (platform === 'shopify') return SHOPIFY_TOPICS[topic] ?? null;
  if (platform === 'custom') return EVENTS.has(topic) ? (topic as OrderEvent) : null;
  if (topic === 'order.created') return 'order.created';
  if (topic === 'order.updated') return WOO_STATUSES[String(obj(payload).status)] ?? null;
  return null;
}

/** The customer's number in E.164: international forms as written, national ones in the order's country. */
export function customerPhone(order: NormalisedOrder, defaultCountry: string | null): string | null {
  const countries = [...order.countries, ...(defaultCountry ? [defaultCountry] : [])].map((c) => c.toUpperCase()).filter((c) => /^[A-Z]{2}$/.test(c));
  for (const raw of order.phones) {
    const text = raw.replace(/^00/, '+');
    if (text.startsWith('+')) {
      const e164 = toE164(text);
      if (e164) return e164;
      continue;
    }
    for (const country of countries) {
      try {
        const parsed = parsePhoneNumberFromString(text, country as CountryCode);
        if (parsed?.isPossible()) return parsed.number;
      } catch {
        // an unknown country code: try the next
      }
    }
  }
  return null;
}
