// Row types of the webhook endpoint tables (migration 008).
import type { ColumnType } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  /** 'connect', 'messaging' or 'connect_client' (a Connect client's own endpoint) */
  api: string;
  /** The Connect client of a `connect_client` endpoint (migration 027); null otherwise. */
  client_id: ColumnType<string | null, string | null | undefined, string | null>;
  url: string;
  description: string | null;
  event_types: string[];
  status: ColumnType<string, string | undefined, string>;
  api_version: ColumnType<string, string | undefined, string>;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The first 12 characters of the current secret (`whsec_Yt7Lp2`). */
  secret_prefix: ColumnType<string, string | undefined, string>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

/** A redelivery's outbox row, the row it repeats, and its event id (the row's own `event_id` is suffixed). */
export interface WebhookRedeliveriesTable {
  outbox_id: string;
  workspace_id: string;
  event_id: string;
  redelivery_of: string;
}

export interface WebhookEndpointTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_redeliveries: WebhookRedeliveriesTable;
}
