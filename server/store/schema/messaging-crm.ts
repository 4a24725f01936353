// Row types of the messaging-crm tables (see migration 009). The columns 009 adds to
// business_accounts, phone_numbers and contacts are merged into their row types below
// (module augmentation), so schema.ts keeps only what 001 created.
import type { ColumnType, Generated } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;

export type CustomFieldType = 'text' | 'number' | 'date' | 'choice';
export type CustomFieldValue = string | number;

export interface SegmentConditionRow {
  field: string;
  operator: string;
  value?: string | number;
}

export interface SegmentFilterRow {
  match: 'all' | 'any';
  conditions: SegmentConditionRow[];
}

export interface TagsTable {
  id: string;
  workspace_id: string;
  name: string;
  color: string | null;
  created_at: CreatedAt;
  /** A count over 10,000 contacts and when it was made (migration 037c, contacts/counts.ts). */
  contact_count: ColumnType<number | null, number | null | undefined, number | null>;
  counted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface ContactTagsTable {
  contact_id: string;
  tag_id: string;
  created_at: CreatedAt;
}

export interface CustomFieldsTable {
  id: string;
  workspace_id: string;
  key: string;
  label: string;
  type: CustomFieldType;
  /** The choices of a `choice` field; null for other types. */
  options: ColumnType<string[] | null, string | null, string | null>;
  created_at: CreatedAt;
}

export interface SegmentsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  filter: Json<SegmentFilterRow>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  /** A count over 10,000 contacts and when it was made (migration 037c, contacts/counts.ts). */
  contact_count: ColumnType<number | null, number | null | undefined, number | null>;
  counted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface MarketingMessagesSettingsTable {
  business_account_id: string;
  workspace_id: string;
  enabled: Generated<boolean>;
  product_policy: Generated<'CLOUD_API_FALLBACK' | 'STRICT'>;
  activity_sharing: boolean | null;
  onboarding_status: Generated<'NOT_STARTED' | 'PENDING' | 'ONBOARDED' | 'INELIGIBLE'>;
  onboarding_checked_at: NullableTimestamp;
  updated_at: UpdatedAt;
}

export interface OptOutSettingsTable {
  workspace_id: string;
  /** null: the defaults of the workspace's locale. */
  opt_out_keywords: ColumnType<string[] | null, string | null, string | null>;
  opt_in_keywords: ColumnType<string[] | null, string | null, string | null>;
  confirmation: Generated<boolean>;
  /** null: the default text in the customer's language. */
  opt_out_confirmation: string | null;
  opt_in_confirmation: string | null;
  updated_at: ColumnType<Date, Date | string, Date | string>;
}

/** Messages accepted for contacts since erased, per UTC month (usage counts them). */
export interface MessageUsageErasedTable {
  workspace_id: string;
  period_start: ColumnType<Date, Date | string, Date | string>;
  messages: number;
}

export interface MessagingSettingsTable {
  workspace_id: string;
  locale: string | null;
  /** ISO 3166-1 alpha-2; null: the country of the workspace's first number. */
  country: ColumnType<string | null, string | null | undefined, string | null>;
  updated_at: ColumnType<Date, Date | string, Date | string>;
}

export interface ContactErasuresTable {
  id: string;
  workspace_id: string;
  contact_id: string;
  erased_by: string;
  counts: ColumnType<Record<string, number>, string, string>;
  erased_at: ColumnType<Date, Date | string, Date | string>;
}

export type ContactImportStatus = 'validating' | 'importing' | 'completed' | 'failed';

export interface ContactImportError {
  line: number;
  column: string | null;
  detail: string;
}

export interface ContactImportsTable {
  id: string;
  workspace_id: string;
  status: ContactImportStatus;
  filename: string | null;
  total_rows: Generated<number>;
  processed_rows: Generated<number>;
  created_count: Generated<number>;
  updated_count: Generated<number>;
  merged_count: Generated<number>;
  error_count: Generated<number>;
  errors: ColumnType<ContactImportError[], string | undefined, string>;
  failure_reason: string | null;
  created_at: ColumnType<Date, Date | string, Date | string>;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface MessagingCrmTables {
  opt_out_settings: OptOutSettingsTable;
  message_usage_erased: MessageUsageErasedTable;
  messaging_settings: MessagingSettingsTable;
  contact_erasures: ContactErasuresTable;
  contact_imports: ContactImportsTable;
  tags: TagsTable;
  contact_tags: ContactTagsTable;
  custom_fields: CustomFieldsTable;
  segments: SegmentsTable;
  marketing_messages_settings: MarketingMessagesSettingsTable;
}

declare module '../schema.js' {
  interface BusinessAccountsTable {
    status: Generated<'active' | 'token_invalid' | 'suspended'>;
    last_synced_at: NullableTimestamp;
    /** Set when the account was disconnected: its numbers neither send nor receive. */
    disconnected_at: NullableTimestamp;
  }
  interface PhoneNumbersTable {
    messaging_limit_tier: string | null;
    updated_at: UpdatedAt;
  }
  interface ContactsTable {
    /** Values by custom field key (jsonb object). */
    custom_fields: ColumnType<Record<string, CustomFieldValue>, string | undefined, string>;
    /** When the contact opted out of messages; null: not opted out. */
    opted_out_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    opt_out_source: ColumnType<'keyword' | 'api' | 'import' | null, 'keyword' | 'api' | 'import' | null | undefined, 'keyword' | 'api' | 'import' | null>;
  }
}
