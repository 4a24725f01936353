// Hashing and encryption of credentials.
// - Passwords: scrypt at OWASP parameters (N=2^17, r=8, p=1), self-describing format.
// - API keys and client secrets: high-entropy, so a keyed SHA-256 (HMAC with a server pepper)
//   is enough and keeps every request fast; compared in constant time.
// - Webhook signing secrets must be retrievable to sign: AES-256-GCM at rest.
import crypto, { createCipheriv, createDecipheriv, createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { HttpProblem } from './problems.js';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;
const SCRYPT = { N: 2 ** 17, r: 8, p: 1, maxmem: 256 * 1024 * 1024 };
/** scrypt's cost parameter N for new password hashes: OWASP's 2^17 (tests may use less, see Platform). */
export const PASSWORD_COST = SCRYPT.N;

// Each scrypt call takes 128 MiB and tens of milliseconds of a libuv thread: unbounded, 100
// concurrent sign-ins would queue behind each other and hold gigabytes (bad-inputs K9). A few run
// at once, a short queue waits, and beyond it the caller gets 429 with Retry-After.
const HASHING_SLOTS = 2;
const HASHING_QUEUE = 16;
let hashing = 0;
const waiting: (() => void)[] = [];

async function bounded<T>(work: () => Promise<T>): Promise<T> {
  if (hashing >= HASHING_SLOTS) {
    if (waiting.length >= HASHING_QUEUE)
      throw new HttpProblem(429, 'rate-limited', 'Too many sign-ins at once; retry in a second.', {}, { 'retry-after': '1' });
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else hashing++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next)
      next(); // the slot passes straight to the next caller
    else hashing--;
  }
}

/** `cost`: scrypt's N, a power of two; the hash records it, so verification follows the hash. */
export async function hashPassword(password: string, cost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const hash = await bounded(() => scrypt(password.normalize('NFKC'), salt, 32, { ...SCRYPT, N: cost }));
  return `scrypt$${cost}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await bounded(() =>
    scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64'), expected.length, {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: SCRYPT.maxmem,
    }),
  );
  return timingSafeEqual(actual, expected);
}

/** A hash to burn the same time as a real check (at the same cost) when the account does not exist. */
export function dummyPasswordHash(cost = PASSWORD_COST): string {
  return `scrypt$${cost}$${SCRYPT.r}$${SCRYPT.p}$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=`;
}

export class SecretBox {
  private readonly pepper: Buffer;
  private readonly key: Buffer;

  /** `masterKey`: 32+ bytes of secret material from configuration. */
  constructor(masterKey: string) {
    this.pepper = createHmac('sha256', masterKey).update('digest').digest();
    this.key = createHmac('sha256', masterKey).update('encrypt').digest();
  }

  /** Keyed digest of a high-entropy secret, hex; store this, never the secret. */
  digest(secret: string): string {
    return createHmac('sha256', this.pepper).update(secret).digest('hex');
  }

  /** Constant-time comparison of a presented secret with a stored digest. */
  matches(secret: string, digestHex: string): boolean {
    const a = Buffer.from(this.digest(secret), 'hex');
    const b = Buffer.from(digestHex, 'hex');
    // Looked up on the module when called, so that a test can observe the comparison (bad-inputs A11).
    return a.length === b.length && crypto.timingSafeEqual(a, b);
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`;
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unknown sealed-secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}
