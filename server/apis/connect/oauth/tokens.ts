// Connect tokens: issuing (codes, access and refresh tokens) and the lookups the token endpoint
// and the bearer scheme share. Every secret is random, shown once and stored as a keyed digest;
// rows are found by digest and confirmed in constant time (`secrets.matches`).
//
// Lifetimes follow the contract: codes 10 minutes; access tokens 1 hour and refresh tokens 30 days
// unless the client sets its own (within the contract's bounds).
// Refresh tokens rotate: each use retires the presented one (`rotated_at`) and issues a new pair
// in the same family, whose rows name the refresh token they came from (`parent_id`). A family is
// the chain started by one code (`family_id` = the code's id), so a reused code or a retired
// refresh token revokes the whole chain in one statement, pairs issued in a grace period included.
import type { Kysely, Transaction } from 'kysely';
import { base62, newId } from '#server/lib/ids.js';
import type { SecretBox } from '#server/lib/secrets.js';
import type { Database } from '#server/store/schema.js';

export const CODE_TTL_SECONDS = 10 * 60;
export const ACCESS_TOKEN_TTL_SECONDS = 60 * 60;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 60 * 60;

export const SCOPES = ['documents:write', 'links:write', 'analytics:read', 'webhooks:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const ACCESS_TOKEN_PATTERN = /^cat_[0-9A-Za-z]{40}$/;
export const REFRESH_TOKEN_PATTERN = /^crt_[0-9A-Za-z]{40}$/;
export const CODE_PATTERN = /^ac_[0-9A-Za-z]{32}$/;

export const newCode = () => `ac_${base62(32)}`;
const newAccessToken = () => `cat_${base62(40)}`;
const newRefreshToken = () => `crt_${base62(40)}`;

export type Db = Kysely<Database> | Transaction<Database>;

export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scopes: string[];
}

/** Scopes in the contract's order, without duplicates. */
export function orderScopes(scopes: Iterable<string>): string[] {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s));
}

/** A client's own token lifetimes in seconds (ConnectClient `access_token_ttl_seconds`, …); unset: the defaults. */
export interface Lifetimes {
  access?: number;
  refresh?: number;
}

/** The lifetimes a client row sets. */
export const lifetimesOf = (client: { access_token_ttl_seconds: number | null; refresh_token_ttl_seconds: number | null }): Lifetimes => ({
  access: client.access_token_ttl_seconds ?? undefined,
  refresh: client.refresh_token_ttl_seconds ?? undefined,
});

/** A new access and refresh token pair for a grant, in `family`; `parent` is the refresh token it is issued from. */
export async function issueTokens(
  db: Db,
  secrets: SecretBox,
  now: Date,
  grant: { id: string; workspace_id: string; client_id: string },
  family: string,
  scopes: string[],
  parent: string | null = null,
  lifetimes: Lifetimes = {},
): Promise<IssuedTokens> {
  const accessTtl = lifetimes.access ?? ACCESS_TOKEN_TTL_SECONDS;
  const refreshTtl = lifetimes.refresh ?? REFRESH_TOKEN_TTL_SECONDS;
  const access = newAccessToken();
  const refresh = newRefreshToken();
  const common = {
    workspace_id: grant.workspace_id,
    client_id: grant.client_id,
    grant_id: grant.id,
    family_id: family,
    parent_id: parent,
    scopes,
    created_at: now,
  };
  await db
    .insertInto('connect_tokens')
    .values([
      { id: newId('tok'), kind: 'access', digest: secrets.digest(access), expires_at: new Date(now.getTime() + accessTtl * 1000), ...common },
      { id: newId('tok'), kind: 'refresh', digest: secrets.digest(refresh), expires_at: new Date(now.getTime() + refreshTtl * 1000), ...common },
    ])
    .execute();
  return { access_token: access, refresh_token: refresh, expires_in: accessTtl, scopes };
}

/** Revokes every live token of a family (reused code or refresh token). */
export async function revokeFamily(db: Db, family: string, now: Date): Promise<void> {
  await db.updateTable('connect_tokens').set({ revoked_at: now }).where('family_id', '=', family).where('revoked_at', 'is', null).execute();
}

/** Revokes every live token of a grant. */
export async function revokeGrantTokens(db: Db, grantId: string, now: Date): Promise<void> {
  await db.updateTable('connect_tokens').set({ revoked_at: now }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
}

/** A token row by its value (access or refresh), confirmed in constant time; undefined if none. */
export async function findToken(db: Db, secrets: SecretBox, value: string) {
  if (!ACCESS_TOKEN_PATTERN.test(value) && !REFRESH_TOKEN_PATTERN.test(value)) return undefined;
  const row = await db.selectFrom('connect_tokens').selectAll().where('digest', '=', secrets.digest(value)).executeTakeFirst();
  return row && secrets.matches(value, row.digest) ? row : undefined;
}
