// Row types of the campaigns tables (migration 011).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;

export type CampaignStatusValue = 'draft' | 'scheduled' | 'preparing' | 'sending' | 'paused' | 'completed' | 'cancelled' | 'failed';
export type RecipientState = 'queued' | 'sending' | 'sent' | 'delivered' | 'read' | 'failed' | 'skipped';

export interface CampaignsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: CampaignStatusValue;
  phone_number_id: string;
  chatapp_phone_number: string;
  waba_id: string;
  audience: Json<unknown>;
  template: Json<unknown>;
  template_id: string | null;
  rate_per_second: number;
  scheduled_at: NullableTimestamp;
  failure_reason: string | null;
  total: Generated<number>;
  /** Recipients sent again because a lease expired with the call in flight (a crash). */
  resent: Generated<number>;
  /** Audience contacts left out because they had opted out (at start, or before their send). */
  opted_out_skipped: Generated<number>;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The audience counted when sending was asked for (migration 037b); null before. */
  audience_count: ColumnType<number | null, number | null | undefined, number | null>;
  /** While `preparing`: the last contact id inserted as a recipient. */
  prepared_through: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CampaignRecipientsTable {
  id: Generated<string>;
  campaign_id: string;
  /** null once the contact was erased (the row stays: the campaign's counts do not change). */
  contact_id: string | null;
  phone: string | null;
  state: Generated<RecipientState>;
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  leased_by: string | null;
  message_id: string | null;
  provider_message_id: string | null;
  error: ColumnType<unknown | null, string | null | undefined, string | null>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface CampaignSendSlotsTable {
  phone_number_id: string;
  next_slot_at: Timestamp;
  paused_until: NullableTimestamp;
}

export interface CampaignTables {
  campaigns: CampaignsTable;
  campaign_recipients: CampaignRecipientsTable;
  campaign_send_slots: CampaignSendSlotsTable;
}
