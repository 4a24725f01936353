// Row types of the tables the migrations create (Kysely's view of the database).
import type { ColumnType, Generated } from 'kysely';
import type { ConnectOAuthTables } from './schema/connect-oauth.js';
import type { ConnectContentTables } from './schema/connect-content.js';
import type { MessagingCrmTables } from './schema/messaging-crm.js';
import type { MessagingInboxTables } from './schema/messaging-inbox.js';
import type { CampaignTables } from './schema/campaigns.js';
import type { CommerceTables } from './schema/commerce.js';
import type { AutomationTables } from './schema/automation.js';
import type { BotTables } from './schema/bots.js';
import type { FormTables } from './schema/forms.js';
import type { PackTables } from './schema/packs.js';
import type { OperationsTables } from './schema/operations.js';
import type { WebhookEndpointTables } from './schema/webhook-endpoints.js';
import type { ProviderDeliveryTables } from './schema/provider-deliveries.js';
import type { InboundTables } from './schema/inbound.js';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface WorkspacesTable {
  id: string;
  name: string;
  slug: string;
  plan: Generated<string>;
  login_session_cap: Generated<number>;
  created_at: CreatedAt;
}

export interface OwnersTable {
  id: string;
  workspace_id: string;
  email: string;
  name: string;
  password_hash: string;
  role: Generated<string>;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  name: string;
  kind: string;
  scopes: string[];
  prefix: string;
  digest: string;
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

/** Digests of rotated-away API keys (migrations/023_retired_credentials.ts). */
export interface RetiredCredentialsTable {
  digest: string;
  workspace_id: string;
  kind: 'messaging_key' | 'login_key';
  retired_at: ColumnType<Date, Date | string, Date | string>;
}

/** Invite codes of SIGNUP=invite (migrations/026_signup_invites.ts). */
export interface SignupInvitesTable {
  id: string;
  code_digest: string;
  email: string | null;
  created_at: CreatedAt;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: NullableTimestamp;
  used_by_workspace_id: string | null;
}

export interface OutboxTable {
  id: string;
  workspace_id: string;
  endpoint_kind: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: Generated<'pending' | 'succeeded' | 'failed'>;
  attempts: Generated<number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  lease_until: NullableTimestamp;
  leased_by: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: CreatedAt;
  finished_at: NullableTimestamp;
  /** `traceparent` of the request that queued the delivery (tracing on), for the delivery's span link. */
  trace_context: string | null;
}

export interface PlatformSettingsTable {
  name: string;
  value: string;
}

export interface DeliveryAttemptsTable {
  id: string;
  outbox_id: string;
  attempt: number;
  started_at: Timestamp;
  duration_ms: number;
  status_code: number | null;
  response_excerpt: string | null;
  error: string | null;
}

export interface BusinessAccountsTable {
  id: string;
  workspace_id: string;
  kind: 'sandbox' | 'cloud_api';
  provider_waba_id: string;
  name: string;
  access_token_enc: string | null;
  webhooks_subscribed_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface PhoneNumbersTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  provider_phone_number_id: string;
  display_phone_number: string;
  verified_name: string;
  status: Generated<string>;
  quality_rating: Generated<string>;
  messages_per_second: Generated<number>;
  created_at: CreatedAt;
}

export interface ContactsTable {
  id: string;
  workspace_id: string;
  phone: string;
  name: string | null;
  email: string | null;
  last_inbound_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface MessagesTable {
  id: string;
  workspace_id: string;
  phone_number_id: string;
  contact_id: string;
  direction: 'inbound' | 'outbound';
  type: string;
  content: ColumnType<unknown, string, string>;
  provider_message_id: string | null;
  status: string;
  error: ColumnType<unknown | null, string | null, string | null>;
  created_at: CreatedAt;
  status_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface SignInFailuresTable {
  /** `email:<digest>` or `ip:<address>`. */
  subject: string;
  failed_at: Timestamp;
}

export interface LoginAppsTable {
  id: string;
  workspace_id: string;
  name: string;
  use_service_phone: boolean;
  phone_number_id: string | null;
  webhook_destination: 'none' | 'production' | 'staging' | 'hosted';
  production_webhook_url: string | null;
  staging_webhook_url: string | null;
  api_key_prefix: string;
  api_key_digest: string;
  webhook_secret_prefix: string;
  webhook_secret_enc: string;
  previous_webhook_secret_enc: string | null;
  previous_webhook_secret_until: NullableTimestamp;
  provider_webhook_status: Generated<string>;
  provider_webhook_error: string | null;
  provider_webhook_code: number | null;
  provider_webhook_updated_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** `client`: an integrator's app; `verified_links`: the workspace's own, for phone-verified share links (031). */
  purpose: Generated<'client' | 'verified_links'>;
  /** OpenID Connect (041): redirect URIs registered for the app as a client, compared exactly. */
  oidc_redirect_uris: Generated<string[]>;
  /** `confidential`: authenticates with its API key at the token endpoint; `public`: PKCE only. */
  oidc_client_type: Generated<'confidential' | 'public'>;
}

/** One authorization request of an app's OpenID Connect sign-in page, and its code (041). */
export interface LoginOidcRequestsTable {
  id: string;
  app_id: string;
  workspace_id: string;
  browser_digest: string;
  redirect_uri: string;
  state: string | null;
  nonce: string | null;
  code_challenge: string | null;
  scopes: string[];
  session_id: string | null;
  code_digest: string | null;
  code_expires_at: NullableTimestamp;
  code_used_at: NullableTimestamp;
  phone: string | null;
  name: string | null;
  amr: string[] | null;
  auth_time: NullableTimestamp;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** Access tokens of the userinfo endpoint (041). */
export interface LoginOidcTokensTable {
  id: string;
  digest: string;
  app_id: string;
  request_id: string;
  sub: string;
  phone: string;
  name: string | null;
  scopes: string[];
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface LoginSessionsTable {
  id: string;
  app_id: string;
  workspace_id: string;
  phone_number_id: string;
  login_code: string;
  subscribe_token_digest: string;
  status: Generated<'pending' | 'success' | 'expired'>;
  expires_at: Timestamp;
  verified_at: NullableTimestamp;
  phone: string | null;
  profile_name: string | null;
  message_id: string | null;
  token_jti: string | null;
  token_expires_at: NullableTimestamp;
  token_used_at: NullableTimestamp;
  created_at: Timestamp;
  /** The verification token, sealed (004_login_keys): status answers the same token every time. */
  verification_token_enc: string | null;
  /** `message`: the user sends LOGIN; `code`: a one-time code was sent to `bound_phone` (029_login_phone_codes). */
  mode: Generated<'message' | 'code'>;
  /** E.164 of the only number whose LOGIN verifies (and where a code goes); null: any number. */
  bound_phone: string | null;
  /** LOGINs with this session's code from a number other than `bound_phone`: ignored, counted. */
  ignored_logins: Generated<number>;
  /** Keyed digest of the code sent (mode `code`); the code itself is never stored. */
  code_digest: string | null;
  code_attempts: Generated<number>;
  code_sends: Generated<number>;
  code_sent_at: NullableTimestamp;
}

/** ES256 keys of the Login verification tokens (004_login_keys). */
export interface LoginSigningKeysTable {
  kid: string;
  private_jwk_enc: string;
  public_jwk: string;
  created_at: Timestamp;
  retired_at: NullableTimestamp;
}

export interface LoginSessionEventsTable {
  id: Generated<string>;
  session_id: string;
  event: 'verified' | 'expired';
  created_at: CreatedAt;
}

export interface HostedWebhookReceiptsTable {
  id: string;
  app_id: string;
  workspace_id: string;
  event_id: string;
  event_type: string;
  payload: ColumnType<unknown, string, string>;
  received_at: Timestamp;
}

export interface Database
  extends ConnectOAuthTables,
    ConnectContentTables,
    WebhookEndpointTables,
    MessagingCrmTables,
    MessagingInboxTables,
    CampaignTables,
    CommerceTables,
    AutomationTables,
    BotTables,
    FormTables,
    PackTables,
    OperationsTables,
    ProviderDeliveryTables,
    InboundTables {
  workspaces: WorkspacesTable;
  owners: OwnersTable;
  api_keys: ApiKeysTable;
  retired_credentials: RetiredCredentialsTable;
  signup_invites: SignupInvitesTable;
  outbox: OutboxTable;
  delivery_attempts: DeliveryAttemptsTable;
  platform_settings: PlatformSettingsTable;
  business_accounts: BusinessAccountsTable;
  phone_numbers: PhoneNumbersTable;
  contacts: ContactsTable;
  messages: MessagesTable;
  login_apps: LoginAppsTable;
  login_sessions: LoginSessionsTable;
  login_session_events: LoginSessionEventsTable;
  login_signing_keys: LoginSigningKeysTable;
  login_oidc_requests: LoginOidcRequestsTable;
  login_oidc_tokens: LoginOidcTokensTable;
  hosted_webhook_receipts: HostedWebhookReceiptsTable;
  sign_in_failures: SignInFailuresTable;
}
