// Resource ids and secrets: `<prefix>_<base62>`, from the CSPRNG, never reused.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters without modulo bias (rejection sampling). */
export function base62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** The contract's ResourceId pattern: what `newId` makes, for checks made before validation runs. */
export const RESOURCE_ID = /^[a-z]{2,6}_[0-9A-Za-z]{8,48}$/;

/** A resource id matching the contract's ResourceId pattern, e.g. `doc_9KfQ2x7LmT4vP1sZ`. */
export function newId(prefix: string): string {
  return `${prefix}_${base62(20)}`;
}

/** A secret with a recognisable prefix (`sk_live_…`, `whsec_…`): 32 base62 chars ≈ 190 bits. */
export function newSecret(prefix: string): string {
  return `${prefix}${base62(32)}`;
}
