// Verification tokens: ES256 JWTs signed with a key generated once and kept in the database
// (private half sealed with the master key, so every instance signs with the same key and the
// JWKS route publishes it). Single use is the database's job, not the JWT's: verify-token
// consumes a token with one conditional UPDATE, so of any number of concurrent calls exactly
// one sees an affected row.
import { createPrivateKey, randomUUID } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { compactVerify, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { base62 } from '#server/lib/ids.js';
import { E164 } from '#server/lib/phone.js';
import type { Platform } from '#server/platform.js';
import type { components, operations } from '#generated/login/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { loginCaller } from './auth.js';

type S = components['schemas'];
export type PublicKey = S['LoginSigningKey'];
export type InvalidReason = S['TokenInvalidReason'];

/** `exp` is 5 minutes after verification (contract: LoginSessionStatus.verificationToken). */
export const TOKEN_LIFETIME_SECONDS = 300;
/** Instances' clocks may differ a little; a token is never refused as "not yet valid" for that. */
const NBF_LEEWAY_SECONDS = 30;
/** The longest token the contract accepts; ours are ~600 bytes. */
const MAX_TOKEN_LENGTH = 8192;

interface KeyRing {
  kid: string;
  /**
   * Signs with the active key, synchronously (fast-jwt over node:crypto). jose signs through
   * WebCrypto, whose answer comes back as an event-loop callback: behind the other subscribers'
   * queries of the same message, that one hop held back a sign-in's `verified` event.
   */
  sign: (claims: Record<string, unknown>) => string;
  /** Every published key by kid (the active one and any retired one still listed). */
  publicKeys: Map<string, CryptoKey>;
  jwks: PublicKey[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This instance's signing keys of verification tokens (made by startLogin). */
    loginSigningKeys: SigningKeys;
  }
}

/** The key ring of one instance, loaded (or generated, the first time anywhere) on first use, once. */
export class SigningKeys {
  private loading?: Promise<KeyRing>;

  constructor(private readonly platform: Platform) {}

  ring(): Promise<KeyRing> {
    if (!this.loading) {
      this.loading = loadRing(this.platform);
      this.loading.catch(() => (this.loading = undefined)); // a database hiccup must not poison the cache
    }
    return this.loading;
  }
}

async function loadRing(platform: Platform): Promise<KeyRing> {
  const db = platform.store.db;
  if (!(await db.selectFrom('login_signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst())) {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const now = platform.now();
    const kid = `login-${now.toISOString().slice(0, 7)}-${base62(6)}`;
    const pub = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
    const sealed = platform.secrets.encrypt(JSON.stringify(await exportJWK(privateKey)));
    // Another instance may win the race to the one active key (unique index): then use its key.
    await sql`insert into login_signing_keys (kid, private_jwk_enc, public_jwk, created_at)
      values (${kid}, ${sealed}, ${JSON.stringify(pub)}, ${now}) on conflict do nothing`.execute(db);
  }
  const rows = await db.selectFrom('login_signing_keys').selectAll().orderBy('created_at', 'desc').execute();
  const active = rows.find((r) => r.retired_at === null)!;
  const publicKeys = new Map<string, CryptoKey>();
  const jwks: PublicKey[] = [];
  for (const row of rows) {
    const { kty, crv, x, y, kid } = JSON.parse(row.public_jwk) as JWK & { kid: string };
    const jwk = { kty, crv, x, y, kid, alg: 'ES256', use: 'sig' } as PublicKey;
    jwks.push(jwk);
    publicKeys.set(kid, (await importJWK(jwk, 'ES256')) as CryptoKey);
  }
  const privateJwk = JSON.parse(platform.secrets.decrypt(active.private_jwk_enc)) as JWK;
  const pem = createPrivateKey({ key: privateJwk as import('node:crypto').JsonWebKey, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' });
  const sign = createSigner({ key: pem as string, algorithm: 'ES256', kid: active.kid });
  return { kid: active.kid, sign, publicKeys, jwks };
}

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

export async function issueToken(server: FastifyInstance, claims: { appId: string; sessionId: string; phone: string; at: Date }): Promise<IssuedToken> {
  const { platform } = server;
  const ring = await server.loginSigningKeys.ring();
  const iat = Math.floor(claims.at.getTime() / 1000);
  const jti = randomUUID();
  // Header { alg: ES256, typ: JWT, kid }; every time claim is given, so the signer adds none.
  const token = ring.sign({
    sid: claims.sessionId,
    iss: platform.config.publicUrl,
    aud: claims.appId,
    sub: claims.phone,
    jti,
    iat,
    nbf: iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
  });
  return { token, jti, expiresAt: new Date((iat + TOKEN_LIFETIME_SECONDS) * 1000) };
}

export type Verdict = S['TokenVerificationValid'] | { valid: false; reason: InvalidReason };

/**
 * The verdict on `token` for the Login app `appId`. Checks run in the contract's order
 * (malformed, invalid_signature, invalid_claims, wrong_app, expired, already_used); only the
 * last step writes, so a token refused earlier is left redeemable.
 */
export async function verifyToken(server: FastifyInstance, appId: string, token: string): Promise<Verdict> {
  const { platform } = server;
  const invalid = (reason: InvalidReason): Verdict => ({ valid: false, reason });
  let header: ReturnType<typeof decodeProtectedHeader>;
  let claims: ReturnType<typeof decodeJwt>;
  try {
    if (token.length > MAX_TOKEN_LENGTH || !/^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)) return invalid('malformed');
    header = decodeProtectedHeader(token);
    claims = decodeJwt(token);
  } catch {
    return invalid('malformed');
  }
  // Only our own keys, picked by kid: `alg: none`, HS256 with the public key, and embedded or
  // remote keys (`jwk`, `jku`, `x5u`, `x5c`) never get as far as a signature check (bad-inputs D9, D10).
  const ring = await server.loginSigningKeys.ring();
  const key = typeof header.kid === 'string' ? ring.publicKeys.get(header.kid) : undefined;
  if (header.alg !== 'ES256' || !key || header.crit !== undefined) return invalid('invalid_signature');
  try {
    await compactVerify(token, key, { algorithms: ['ES256'] });
  } catch {
    return invalid('invalid_signature');
  }
  const now = Math.floor(platform.now().getTime() / 1000);
  const { iss, aud, sub, sid, jti, iat, nbf, exp } = claims;
  const shaped =
    iss === platform.config.publicUrl &&
    typeof aud === 'string' &&
    typeof sub === 'string' &&
    E164.test(sub) &&
    typeof sid === 'string' &&
    typeof jti === 'string' &&
    [iat, nbf, exp].every((n) => typeof n === 'number' && Number.isFinite(n));
  if (!shaped || nbf! > now + NBF_LEEWAY_SECONDS) return invalid('invalid_claims');
  if (aud !== appId) return invalid('wrong_app');
  if (exp! <= now) return invalid('expired');
  const used = await platform.store.db
    .updateTable('login_sessions')
    .set({ token_used_at: platform.now() })
    .where('token_jti', '=', jti as string)
    .where('token_used_at', 'is', null)
    .where('app_id', '=', appId)
    .where('id', '=', sid as string)
    .returning(['id', 'phone', 'profile_name', 'verified_at'])
    .executeTakeFirst();
  if (!used?.phone || !used.verified_at) return invalid('already_used');
  return { valid: true, user: { phone: used.phone, name: used.profile_name }, sessionId: used.id, verifiedAt: used.verified_at.toISOString() };
}

export const getLoginJwks: Handler<operations['getLoginJwks']> = async (request, reply) => {
  reply.header('cache-control', 'public, max-age=300');
  return { keys: (await request.server.loginSigningKeys.ring()).jwks };
};

export const verifyTokenHandler: Handler<operations['verifyToken']> = async (request, reply) => {
  reply.header('cache-control', 'no-store');
  return verifyToken(request.server, loginCaller(request).appId, request.body.token);
};
