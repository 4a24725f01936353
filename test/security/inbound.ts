// Signed inbound provider webhooks (the Cloud API's shape) for the D and E catalogue files:
// POST /api/webhook/chatapp with `X-Hub-Signature-256` over the exact bytes sent.
import type { FastifyInstance } from 'fastify';
import { sha256Header } from '#server/lib/signatures.js';
import { elapse, eventually } from '../support/eventually.js';

export const INBOUND_URL = '/api/webhook/chatapp';
export const CUSTOMER = '15550100202';

/** A number as the fixture gives it: provider id and display number (`+1555…`). */
export interface Inbox {
  providerPnId: string;
  number: string;
  wabaId?: string;
}

/** The envelope of one `messages` change for `to`. */
export function envelope(to: Inbox, value: Record<string, unknown>) {
  const metadata = { display_phone_number: to.number.replace(/^\+/, ''), phone_number_id: to.providerPnId };
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: to.wabaId ?? 'waba', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata, ...value } }] }],
  };
}

export const textMessage = (id: string, body: string, from = CUSTOMER, at = Date.now()) => ({
  from,
  id,
  timestamp: String(Math.floor(at / 1000)),
  type: 'text',
  text: { body },
});

/** Inbound text messages from `from` (profile name Ana Souza) to `to`. */
export const inbound = (to: Inbox, messages: object[], from = CUSTOMER) =>
  envelope(to, { contacts: [{ profile: { name: 'Ana Souza' }, wa_id: from }], messages });

/** POSTs `body` (a string goes byte for byte), signed with the app secret unless `signature` is given (null: none). */
export function postInbound(app: FastifyInstance, body: object | string, signature?: string | null, headers: Record<string, string> = {}) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const sig = signature === undefined ? sha256Header(app.platform.providerAppSecret, raw) : signature;
  return app.inject({
    method: 'POST',
    url: INBOUND_URL,
    headers: { 'content-type': 'application/json', ...(sig === null ? {} : { 'x-hub-signature-256': sig }), ...headers },
    payload: raw,
  });
}

/** Bus events arrive asynchronously (NOTIFY on PostgreSQL); work after them needs a moment. */
export const settle = (ms = 200) => elapse(ms, 'work after a bus event has no answer to wait on');

/** The last value of `fn`: once `ok` holds, or when the time is up (the caller asserts on it). */
export async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  let last!: T;
  await eventually(async () => ok((last = await fn())), { within: ms }).catch(() => {});
  return last;
}
