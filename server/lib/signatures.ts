// Webhook signatures we send, and the provider's we check.
// - Connect (and Messaging): Stripe's scheme, so Stripe's SDK `constructEvent` verifies it:
//   `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, one v1 per active secret.
// - Login: `sha256=<hex HMAC-SHA256(secret, raw body)>`.
// - Provider (Meta): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>`.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

export function stripeStyleHeader(secrets: string[], rawBody: string, unixSeconds: number): string {
  const signed = `${unixSeconds}.${rawBody}`;
  return [`t=${unixSeconds}`, ...secrets.map((s) => `v1=${hmacHex(s, signed)}`)].join(',');
}

export function sha256Header(secret: string, rawBody: string | Buffer): string {
  return `sha256=${hmacHex(secret, rawBody)}`;
}

/**
 * Constant-time equality of a presented signature or token with the one we computed, compared as
 * text (never decoded first: base64 decoding ignores spare bits, so an edit could decode equal).
 * Different lengths are unequal at once; a length gives nothing away.
 */
export function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Constant-time check of a `sha256=<hex>` header over the raw body. */
export function verifySha256Header(header: string | undefined, secret: string, rawBody: Buffer | string): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const given = header.slice('sha256='.length);
  if (!/^[0-9a-f]{64}$/i.test(given)) return false;
  const a = Buffer.from(given.toLowerCase(), 'hex');
  const b = Buffer.from(hmacHex(secret, rawBody), 'hex');
  return timingSafeEqual(a, b);
}
