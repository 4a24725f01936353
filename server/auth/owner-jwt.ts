// Owner session JWTs: HS256 with a key derived from the platform's master key. Only this server
// issues and checks them, so a symmetric key is enough and nothing needs publishing or storing.
// The audience keeps the two uses apart: an API bearer token cannot serve as the browser's
// cookie session, nor the other way round.
import { SignJWT, errors, jwtVerify } from 'jose';
import { setCapped } from '../lib/capped-map.js';
import { newId } from '../lib/ids.js';
import type { SecretBox } from '../lib/secrets.js';
import type { Platform } from '../platform.js';

export type OwnerAudience = 'owner-api' | 'owner-browser';

export interface OwnerClaims {
  ownerId: string;
  workspaceId: string;
}

export interface IssuedOwnerToken {
  token: string;
  expiresAt: Date;
  expiresIn: number;
}

/** Longer than any token we issue (a few hundred bytes); bigger ones are refused unparsed. */
const MAX_TOKEN_LENGTH = 2048;

/** The per-instance state of owner tokens, a field of the platform (`platform.ownerTokens`). */
export interface OwnerTokenKeys {
  /**
   * A WebCrypto key imported once: jose imports raw bytes or a KeyObject as a WebCrypto key on
   * every call, which was a tenth of the CPU time of an owner request.
   */
  signingKey: Promise<CryptoKey>;
  /** Tokens verified recently (see verifyOwnerToken), by `<audience> <the token's credential digest>`. */
  verified: Map<string, { claims: OwnerClaims; exp: number }>;
}

export function ownerTokenKeys(secrets: SecretBox): OwnerTokenKeys {
  const bytes = Buffer.from(secrets.digest('owner-jwt-key'));
  return { signingKey: crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']), verified: new Map() };
}

export async function issueOwnerToken(
  platform: Platform,
  claims: OwnerClaims,
  audience: OwnerAudience = 'owner-api',
  lifetimeSeconds = platform.config.ownerSessionSeconds,
): Promise<IssuedOwnerToken> {
  const iat = Math.floor(platform.now().getTime() / 1000);
  const exp = iat + lifetimeSeconds;
  const token = await new SignJWT({ ws: claims.workspaceId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(platform.config.publicUrl)
    .setSubject(claims.ownerId)
    .setAudience(audience)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(newId('jti'))
    .sign(await platform.ownerTokens.signingKey);
  return { token, expiresAt: new Date(exp * 1000), expiresIn: lifetimeSeconds };
}

// Tokens verified recently, per platform: a client sends the same token with every request, and
// checking its signature and claims again each time was a noticeable part of an owner request's
// CPU. An entry is keyed by its audience and the credential digest of exactly the token that
// passed (./credential-digest.ts: never the token itself; on a request, the digest its rate
// limit reads too), and still ends at its `exp`. A hit answers without a promise.
const VERIFIED_MAX = 10_000;

/**
 * The claims of a valid token, or null: wrong algorithm (`none` included), key, issuer, audience or
 * expired. `onDead` hears the workspace of a token we signed that has expired (bad-inputs K10).
 * `digest`: `platform.credentialDigest(token)` when the caller has it already (a request's).
 */
export function verifyOwnerToken(
  platform: Platform,
  token: string,
  audience: OwnerAudience = 'owner-api',
  onDead?: (workspaceId: string) => void,
  digest?: string,
): OwnerClaims | null | Promise<OwnerClaims | null> {
  if (!token || token.length > MAX_TOKEN_LENGTH) return null;
  const { verified } = platform.ownerTokens;
  const cacheKey = `${audience} ${digest ?? platform.credentialDigest(token)}`;
  const nowSeconds = Math.floor(platform.now().getTime() / 1000);
  const hit = verified.get(cacheKey);
  if (hit) {
    // jose's own rule: a token is expired once `exp <= now` (in whole seconds).
    if (hit.exp > nowSeconds) return hit.claims;
    verified.delete(cacheKey);
    onDead?.(hit.claims.workspaceId);
    return null;
  }
  return verifyUncached(platform, token, audience, onDead).then((entry) => {
    if (!entry) return null;
    setCapped(verified, cacheKey, entry, VERIFIED_MAX);
    return entry.claims;
  });
}

async function verifyUncached(
  platform: Platform,
  token: string,
  audience: OwnerAudience,
  onDead?: (workspaceId: string) => void,
): Promise<{ claims: OwnerClaims; exp: number } | null> {
  try {
    const { payload } = await jwtVerify(token, await platform.ownerTokens.signingKey, {
      algorithms: ['HS256'],
      typ: 'JWT',
      issuer: platform.config.publicUrl,
      audience,
      currentDate: platform.now(),
      requiredClaims: ['sub', 'iat', 'exp', 'jti'],
    });
    if (typeof payload.sub !== 'string' || typeof payload.ws !== 'string' || typeof payload.exp !== 'number') return null;
    return { claims: { ownerId: payload.sub, workspaceId: payload.ws }, exp: payload.exp };
  } catch (error) {
    // jose checks the signature before the claims: an expired token was signed by us for
    // everything else it says (issuer, audience, type included).
    if (error instanceof errors.JWTExpired && typeof error.payload.ws === 'string') onDead?.(error.payload.ws);
    return null;
  }
}
