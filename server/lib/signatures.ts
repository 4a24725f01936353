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

/** Constant-time check of a `sha256=<hex>` header over the raw body. */
export function verifySha256Header(header: string | undefined, secret: string, rawBody: Buffer | string): boolean {
  if (!header || !header.startsWith('sha256=')) return false;
  const given = header.slice('sha256='.length);
  if (!/^[0-9a-f]{64}$/i.test(given)) return false;
  const a = Buffer.from(given.toLowerCase(), 'hex');
  const b = Buffer.from(hmacHex(secret, rawBody), 'hex');
  return timingSafeEqual(a, b);
}
