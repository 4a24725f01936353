// Row types of the bots tables (migration 014): chatbots and their pairs, message bots and their
// last reply per contact, quick replies.
import type { ColumnType } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;

export type BotStatusValue = 'active' | 'inactive';

export interface ChatbotFallbackRow {
  action: 'reply' | 'assign_agent' | 'none';
  text?: string;
  agent_id?: string;
}

export interface ChatbotsTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  phone_number_id: string | null;
  name: string;
  status: BotStatusValue;
  match_threshold: number;
  fallback: Json<ChatbotFallbackRow>;
  trained_at: NullableTimestamp;
  last_assigned_owner_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ChatbotQaPairsTable {
  chatbot_id: string;
  position: number;
  question_key: string;
  question: string;
  alternatives: Json<string[]>;
  answer: string;
}

export interface MessageBotScheduleRow {
  timezone: string;
  windows: { days: string[]; start: string; end: string }[];
  reply_when: 'inside' | 'outside';
}

export interface MessageBotReplyRow {
  type: 'text' | 'template' | 'media';
  text?: string;
  template_id?: string;
  language?: string;
  media_type?: 'image' | 'video' | 'audio' | 'document';
  media_url?: string;
  caption?: string;
}

export interface MessageBotsTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  phone_number_id: string | null;
  name: string;
  kind: 'keyword' | 'schedule';
  status: BotStatusValue;
  keywords: Json<string[]>;
  match: 'exact' | 'contains' | 'starts_with' | null;
  schedule: ColumnType<MessageBotScheduleRow | null, string | null, string | null>;
  reply: Json<MessageBotReplyRow>;
  cooldown_minutes: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MessageBotRepliesTable {
  message_bot_id: string;
  contact_id: string;
  last_replied_at: Timestamp;
}

/** Quick replies: `shortcut` is unique per workspace (without the leading `/`). */
export interface QuickRepliesTable {
  id: string;
  workspace_id: string;
  shortcut: string;
  title: string | null;
  text: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface BotTables {
  chatbots: ChatbotsTable;
  chatbot_qa_pairs: ChatbotQaPairsTable;
  message_bots: MessageBotsTable;
  message_bot_replies: MessageBotRepliesTable;
  quick_replies: QuickRepliesTable;
}
