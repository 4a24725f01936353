// API keys: issued once, stored as a keyed digest, verified per request.
//
// Lookup goes by digest: the unique index compares HMAC digests, which a caller cannot steer
// without the server's pepper, so its timing says nothing about a real key; the row found is
// then confirmed with `secrets.matches` (timingSafeEqual). The secret itself never reaches SQL.
//
// A small cache of verified keys (a few seconds), keyed by the request's credential digest
// (./credential-digest.ts: one-shot SHA-256, cheaper than the keyed digest, never the secret
// itself, and the same digest the rate limit's bucket uses), spares a query per request, and a
// hit answers without a promise. Revoking or
// rotating a key clears its entry on this instance at once and publishes an event on the bus
// (LISTEN/NOTIFY), so other instances clear theirs as soon as it arrives. An event can be lost
// while the LISTEN connection reconnects: its return clears the whole cache, and otherwise an
// instance accepts a revoked key for at most CACHE_TTL_MS.
import type { Kysely } from 'kysely';
import { credentialDigester, type CredentialDigest } from './credential-digest.js';
import type { EventBus } from '../events/bus.js';
import { base62 } from '../lib/ids.js';
import { setCapped } from '../lib/capped-map.js';
import { retiredCredentialWorkspace } from './retired-credentials.js';
import type { SecretBox } from '../lib/secrets.js';
import type { Platform } from '../platform.js';
import type { Store } from '../store/db.js';
import type { Database } from '../store/schema.js';

/** `mk_` and 40 base62 characters (≈ 238 bits), as the contract's ApiKeyWithSecret says. */
const KEY_PATTERN = /^mk_[0-9A-Za-z]{40}$/;
const PREFIX_LENGTH = 11;
const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;
/** `last_used_at` is written at most this often per key, not on every request. */
const TOUCH_EVERY_MS = 60_000;
export const KEY_INVALIDATED_EVENT = 'auth.api_key_invalidated';

export interface VerifiedKey {
  id: string;
  workspaceId: string;
  kind: string;
  scopes: string[];
  expiresAt: Date | null;
}

export type ApiKeyStatus = 'active' | 'revoked' | 'expired';

export function keyStatus(row: { revoked_at: Date | null; expires_at: Date | null }, now: Date): ApiKeyStatus {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** A fresh key: the secret (shown once), its display prefix and the digest to store. */
export function newApiKeySecret(secrets: SecretBox): { secret: string; prefix: string; digest: string } {
  const secret = `mk_${base62(40)}`;
  return { secret, prefix: secret.slice(0, PREFIX_LENGTH), digest: secrets.digest(secret) };
}

/** The query that finds a key: by its keyed digest, never by the secret. */
export function findByDigest(db: Kysely<Database>, digest: string) {
  return db.selectFrom('api_keys').select(['id', 'workspace_id', 'kind', 'scopes', 'digest', 'expires_at', 'revoked_at']).where('digest', '=', digest);
}

export class ApiKeyVerifier {
  private readonly cache = new Map<string, { key: VerifiedKey; until: number }>();
  private readonly touched = new Map<string, number>();
  /** The cache key of a secret when the caller has none (the platform's credential digest). */
  readonly digest: CredentialDigest;

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      secrets: SecretBox;
      now: () => Date;
      bus?: EventBus;
      store?: Pick<Store, 'onReconnect'>;
      digest?: CredentialDigest;
    },
  ) {
    this.digest = deps.digest ?? credentialDigester();
    deps.bus?.subscribe(KEY_INVALIDATED_EVENT, (event) => this.forget(String(event.data.key_id)));
    deps.store?.onReconnect(() => this.forgetAll());
  }

  /**
   * The key if `secret` is a live key of `kind`; null for anything else, malformed input included.
   * `onDead` hears the workspace of a key that is revoked, expired or rotated away (bad-inputs K10).
   * `cacheKey`: `this.digest(secret)` when the caller has it already (a request's, which its rate
   * limit reads again), else it is computed here.
   */
  verify(secret: string, kind: string, onDead?: (workspaceId: string) => void, cacheKey?: string): VerifiedKey | null | Promise<VerifiedKey | null> {
    if (!KEY_PATTERN.test(secret)) return null;
    const now = this.deps.now();
    cacheKey ??= this.digest(secret);
    const key = this.cached(cacheKey, now.getTime());
    return key ? this.accept(key, kind, now, onDead) : this.lookUp(secret, cacheKey, kind, now, onDead);
  }

  private async lookUp(secret: string, cacheKey: string, kind: string, now: Date, onDead?: (workspaceId: string) => void): Promise<VerifiedKey | null> {
    const digest = this.deps.secrets.digest(secret);
    const row = await findByDigest(this.deps.db, digest).executeTakeFirst();
    if (!row || !this.deps.secrets.matches(secret, row.digest)) {
      const retiredIn = onDead && (await retiredCredentialWorkspace(this.deps.db, this.deps.secrets, secret, 'messaging_key'));
      if (retiredIn) onDead(retiredIn);
      return null;
    }
    if (keyStatus(row, now) !== 'active') {
      onDead?.(row.workspace_id);
      return null;
    }
    const key = { id: row.id, workspaceId: row.workspace_id, kind: row.kind, scopes: row.scopes, expiresAt: row.expires_at };
    this.remember(cacheKey, key, now.getTime());
    return this.accept(key, kind, now, onDead);
  }

  private accept(key: VerifiedKey, kind: string, now: Date, onDead?: (workspaceId: string) => void): VerifiedKey | null | Promise<VerifiedKey> {
    if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) {
      onDead?.(key.workspaceId);
      return null;
    }
    if (key.kind !== kind) return null;
    const touching = this.touch(key.id, now);
    return touching ? touching.then(() => key) : key;
  }

  /** Drops a key from this instance's cache (revoke, rotate). */
  forget(keyId: string): void {
    for (const [cacheKey, entry] of this.cache) if (entry.key.id === keyId) this.cache.delete(cacheKey);
  }

  /** Drops every cached key (invalidations may have been missed while the LISTEN connection was away). */
  forgetAll(): void {
    this.cache.clear();
  }

  /** Clears the key here at once and on every other instance through the bus. */
  async invalidate(keyId: string, workspaceId: string): Promise<void> {
    this.forget(keyId);
    await this.deps.bus?.publish({ type: KEY_INVALIDATED_EVENT, workspaceId, data: { key_id: keyId } });
  }

  private cached(cacheKey: string, now: number): VerifiedKey | undefined {
    const entry = this.cache.get(cacheKey);
    if (entry && entry.until > now) return entry.key;
    if (entry) this.cache.delete(cacheKey);
    return undefined;
  }

  private remember(cacheKey: string, key: VerifiedKey, now: number) {
    setCapped(this.cache, cacheKey, { key, until: now + CACHE_TTL_MS }, CACHE_MAX);
  }

  /** Records use at most once a minute per key; the WHERE keeps instances from piling up writes. */
  private touch(keyId: string, now: Date): Promise<unknown> | undefined {
    const last = this.touched.get(keyId);
    if (last !== undefined && now.getTime() - last < TOUCH_EVERY_MS) return undefined;
    if (this.touched.size >= CACHE_MAX) this.touched.clear();
    this.touched.set(keyId, now.getTime());
    const cutoff = new Date(now.getTime() - TOUCH_EVERY_MS);
    return this.deps.db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', keyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', cutoff)]))
      .execute();
  }
}

/** The verifier of this server instance (one cache per platform, made by createPlatform). */
export function apiKeyVerifier(platform: Platform): ApiKeyVerifier {
  return platform.apiKeys;
}
