// Row types of the operations tables (migration 015): kanban funnels, Google connect states,
// and the column 015 adds to `owners`.
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface KanbanFunnelsTable {
  id: string;
  workspace_id: string;
  /** null: chats of every business account. */
  business_account_id: string | null;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface KanbanStagesTable {
  funnel_id: string;
  key: string;
  name: string;
  position: number;
  color: string | null;
}

export interface KanbanPlacementsTable {
  funnel_id: string;
  chat_id: string;
  workspace_id: string;
  stage_key: string;
  entered_at: Timestamp;
}

export interface GoogleConnectStatesTable {
  state_digest: string;
  workspace_id: string;
  code_verifier_enc: string;
  redirect_uri: string;
  /** Space-separated, as sent to Google. */
  scopes: string;
  expires_at: Timestamp;
  created_at: Timestamp;
}

export interface OperationsTables {
  kanban_funnels: KanbanFunnelsTable;
  kanban_stages: KanbanStagesTable;
  kanban_placements: KanbanPlacementsTable;
  google_connect_states: GoogleConnectStatesTable;
}

declare module '../schema.js' {
  interface OwnersTable {
    /** Whether the member takes new chats (015). */
    available: Generated<boolean>;
  }
}
