// Row types of the connect-oauth tables (see migrations/006_connect_oauth.ts).
import type { ColumnType } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface ConnectClientsTable {
  id: string;
  workspace_id: string;
  name: string;
  client_type: 'confidential' | 'public';
  redirect_uris: string[];
  secret_prefix: string | null;
  secret_digest: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Lifetimes of this client's tokens in seconds (041b); null: the defaults. */
  access_token_ttl_seconds: ColumnType<number | null, number | null | undefined, number | null>;
  refresh_token_ttl_seconds: ColumnType<number | null, number | null | undefined, number | null>;
  /** The workspace's own client: its owner's authorization needs no consent page (041b). */
  skip_consent: ColumnType<boolean, boolean | undefined, boolean>;
  /** Keyed digest of the RFC 7592 registration access token; null for clients made by the owner. */
  registration_digest: ColumnType<string | null, string | null | undefined, string | null>;
  /** The RFC 7591 metadata the client registered with, returned as registered (041b). */
  registration_metadata: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
}

/** Initial access tokens for dynamic client registration, issued by the owner (041b). */
export interface ConnectRegistrationTokensTable {
  id: string;
  workspace_id: string;
  digest: string;
  prefix: string;
  description: string | null;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface ConnectGrantsTable {
  id: string;
  workspace_id: string;
  client_id: string;
  owner_id: string | null;
  scopes: string[];
  status: ColumnType<'active' | 'revoked', 'active' | 'revoked' | undefined, 'active' | 'revoked'>;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  /** Why the grant ended (migration 027): owner_revoked, refresh_token_reuse, client_revoked. */
  revoke_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ConnectCodesTable {
  id: string;
  digest: string;
  workspace_id: string;
  client_id: string;
  grant_id: string;
  redirect_uri: string;
  code_challenge: string | null;
  scopes: string[];
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface ConnectTokensTable {
  id: string;
  kind: 'access' | 'refresh';
  digest: string;
  workspace_id: string;
  client_id: string;
  grant_id: string;
  family_id: string;
  scopes: string[];
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  rotated_at: NullableTimestamp;
  /** The refresh token this one was issued from; null when issued from a code. */
  parent_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface ConnectOAuthTables {
  connect_clients: ConnectClientsTable;
  connect_grants: ConnectGrantsTable;
  connect_codes: ConnectCodesTable;
  connect_tokens: ConnectTokensTable;
  connect_registration_tokens: ConnectRegistrationTokensTable;
}
