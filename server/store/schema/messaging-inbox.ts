// Row types of the messaging-inbox tables (migration 010). The columns 010 adds to `messages`
// (chat_id, template_id, reply_to_id, sent_at, delivered_at, read_at, failed_at) are merged into `MessagesTable` below.
import type { ColumnType } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T> = ColumnType<T, string, string>;

export type TemplateStatusValue = 'PENDING' | 'APPROVED' | 'REJECTED' | 'PAUSED' | 'DISABLED';
export type TemplateCategoryValue = 'MARKETING' | 'UTILITY' | 'AUTHENTICATION';

export interface MessageTemplatesTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  provider_template_id: string | null;
  name: string;
  language: string;
  category: TemplateCategoryValue;
  status: ColumnType<TemplateStatusValue, TemplateStatusValue | undefined, TemplateStatusValue>;
  /** The components as submitted (the spec's `TemplateComponent[]`). */
  components: Json<unknown[]>;
  rejected_reason: string | null;
  quality_rating: string | null;
  allow_category_change: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface ChatsTable {
  id: string;
  workspace_id: string;
  phone_number_id: string;
  contact_id: string;
  last_message_id: string | null;
  last_message_at: Timestamp;
  unread_count: ColumnType<number, number | undefined, number>;
  /** An `owners` row of the same workspace (the agent). */
  assigned_owner_id: string | null;
  assigned_at: NullableTimestamp;
  read_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface UploadedMediaTable {
  id: string;
  workspace_id: string;
  phone_number_id: string | null;
  provider_media_id: string;
  mime_type: string;
  filename: string | null;
  size_bytes: ColumnType<number, number, number>;
  created_at: CreatedAt;
}

export interface SendIdempotencyTable {
  workspace_id: string;
  key: string;
  request_digest: string;
  /** Null while the first request is in flight. */
  status_code: number | null;
  response: ColumnType<unknown | null, string | null, string | null>;
  created_at: CreatedAt;
}

export interface MessagingInboxTables {
  send_idempotency: SendIdempotencyTable;
  message_templates: MessageTemplatesTable;
  chats: ChatsTable;
  uploaded_media: UploadedMediaTable;
}

// The columns 010 adds to `messages` (001's table lives in schema.ts): merged into its row type.
declare module '../schema.js' {
  interface MessagesTable {
    chat_id: string | null;
    template_id: string | null;
    reply_to_id: string | null;
    sent_at: NullableTimestamp;
    delivered_at: NullableTimestamp;
    read_at: NullableTimestamp;
    failed_at: NullableTimestamp;
    /** 027: the campaign that sent it. */
    campaign_id: ColumnType<string | null, string | null | undefined, string | null>;
  }
}
