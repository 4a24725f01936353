// Verifying the webhooks we send, over the raw body exactly as received (parse after verifying).
// - Connect and Messaging: `X-Connect-Signature` / `X-Messaging-Signature`, Stripe's scheme
//   `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, one v1 per active secret
//   while a rotation overlaps. `t` is signed, so the tolerance check is replay protection.
// - Login: `X-Login-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`, comma-separated
//   while a rotation overlaps. It carries no timestamp (a retry re-sends the same signed bytes),
//   so replays are stopped by handling each event `id` (also `X-Login-Event-Id`) once.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { webhooks as ConnectWebhooks } from '../generated/connect/types.js';
import type { webhooks as LoginWebhooks } from '../generated/login/types.js';
import type { webhooks as MessagingWebhooks } from '../generated/messaging/types.js';

/** The JSON body of each webhook a document declares, as a union. */
type EventOf<W> = {
  [K in keyof W]: W[K] extends { post: { requestBody: { content: { 'application/json': infer Body } } } } ? Body : never;
}[keyof W];

export type ConnectWebhookEvent = EventOf<ConnectWebhooks>;
export type MessagingWebhookEvent = EventOf<MessagingWebhooks>;
export type LoginWebhookEvent = EventOf<LoginWebhooks>;

export type WebhookSignatureReason = 'missing_header' | 'malformed_header' | 'timestamp_out_of_tolerance' | 'no_matching_signature' | 'malformed_body';

export class WebhookSignatureError extends Error {
  constructor(
    readonly reason: WebhookSignatureReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

type RawBody = string | Uint8Array;
/** Header values as Node gives them (`req.headers[...]`) or as fetch does. */
type HeaderValue = string | string[] | null | undefined;
/** One secret, or several while you rotate on your side. */
type Secrets = string | readonly string[];

const HEX64 = /^[0-9a-f]{64}$/i;
/** More values than a rotation overlap needs is not a header we sent (and bounds the work). */
const MAX_SIGNATURES = 8;

function one(header: HeaderValue, name: string): string {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value?.trim()) throw new WebhookSignatureError('missing_header', `The ${name} header is missing.`);
  return value;
}

const hmac = (secret: string, data: RawBody) => createHmac('sha256', secret).update(data).digest();

/** Whether a hex signature equals one of the expected digests, in constant time per comparison. */
function matchesAny(hex: string, expected: Buffer[]): boolean {
  const given = Buffer.from(hex, 'hex');
  let found = false;
  for (const digest of expected) found = timingSafeEqual(given, digest) || found; // no early exit
  return found;
}

function parse<T>(rawBody: RawBody): T {
  try {
    return JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')) as T;
  } catch {
    throw new WebhookSignatureError('malformed_body', 'The signature matches but the body is not JSON.');
  }
}

const list = (secrets: Secrets) => (typeof secrets === 'string' ? [secrets] : [...secrets]);

function verifyStripeStyle<T>(name: string, rawBody: RawBody, header: HeaderValue, secrets: Secrets, toleranceSec: number, nowSec: number): T {
  const value = one(header, name);
  let t: number | undefined;
  const v1: string[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    const [key, val] = eq < 0 ? [part.trim(), ''] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (key === 't') {
      if (!/^\d{1,12}$/.test(val) || t !== undefined) throw new WebhookSignatureError('malformed_header', `${name} has a bad or repeated t=.`);
      t = Number(val);
    } else if (key === 'v1') {
      if (!HEX64.test(val)) throw new WebhookSignatureError('malformed_header', `${name} has a v1= that is not 64 hex digits.`);
      v1.push(val);
    } // other schemes (v0, future ones) are ignored, as Stripe's libraries do
  }
  if (t === undefined || v1.length === 0 || v1.length > MAX_SIGNATURES) {
    throw new WebhookSignatureError('malformed_header', `${name} must be t=<unix seconds>,v1=<hex>[,v1=<hex>].`);
  }
  if (Math.abs(nowSec - t) > toleranceSec) {
    throw new WebhookSignatureError('timestamp_out_of_tolerance', `${name} t=${t} is more than ${toleranceSec}s from now (${nowSec}).`);
  }
  const signed = Buffer.concat([Buffer.from(`${t}.`), typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody]);
  const expected = list(secrets).map((s) => hmac(s, signed));
  let found = false;
  for (const sig of v1) found = matchesAny(sig, expected) || found;
  if (!found) throw new WebhookSignatureError('no_matching_signature', `No v1 in ${name} matches the body and the secret.`);
  return parse<T>(rawBody);
}

export interface StripeStyleOptions {
  /** The current time in unix seconds (tests; defaults to the clock). */
  nowSec?: number;
}

/**
 * Checks `X-Connect-Signature` over the raw body and returns the parsed event. `secret` is the
 * endpoint's `whsec_...`; `toleranceSec` bounds how old (or early) `t` may be.
 */
export function verifyConnectWebhook(
  rawBody: RawBody,
  header: HeaderValue,
  secret: Secrets,
  toleranceSec = 300,
  options: StripeStyleOptions = {},
): ConnectWebhookEvent {
  return verifyStripeStyle('X-Connect-Signature', rawBody, header, secret, toleranceSec, options.nowSec ?? Math.floor(Date.now() / 1000));
}

/** Checks `X-Messaging-Signature` (the same scheme as Connect) and returns the parsed event. */
export function verifyMessagingWebhook(
  rawBody: RawBody,
  header: HeaderValue,
  secret: Secrets,
  toleranceSec = 300,
  options: StripeStyleOptions = {},
): MessagingWebhookEvent {
  return verifyStripeStyle('X-Messaging-Signature', rawBody, header, secret, toleranceSec, options.nowSec ?? Math.floor(Date.now() / 1000));
}

/**
 * Checks `X-Login-Signature` over the raw body and returns the parsed event. The scheme has no
 * timestamp: handle each event `id` once to ignore replays and retries of what you already did.
 */
export function verifyLoginWebhook(rawBody: RawBody, header: HeaderValue, secret: Secrets): LoginWebhookEvent {
  const value = one(header, 'X-Login-Signature');
  const given = value.split(',').map((v) => v.trim());
  if (given.length > MAX_SIGNATURES || !given.every((v) => v.startsWith('sha256=') && HEX64.test(v.slice(7)))) {
    throw new WebhookSignatureError('malformed_header', 'X-Login-Signature must be sha256=<64 hex digits>[,sha256=<hex>].');
  }
  const expected = list(secret).map((s) => hmac(s, rawBody));
  let found = false;
  for (const v of given) found = matchesAny(v.slice(7), expected) || found;
  if (!found) throw new WebhookSignatureError('no_matching_signature', 'No sha256= in X-Login-Signature matches the body and the secret.');
  return parse<LoginWebhookEvent>(rawBody);
}
