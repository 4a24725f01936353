// Row types of the automation tables (migration 013).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;
type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;

export type FlowStatusValue = 'active' | 'inactive';
export type ExecutionStatusValue = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
export type WaitKind = 'reply' | 'form' | 'delay';

export interface AutomationFlowsTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  phone_number_id: string | null;
  name: string;
  description: string | null;
  status: FlowStatusValue;
  version: number;
  /** Trigger priority: higher first, then created_at, then id. */
  priority: Generated<number>;
  last_execution_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AutomationFlowVersionsTable {
  flow_id: string;
  version: number;
  graph: Json<unknown>;
  created_at: Timestamp;
}

export interface AutomationExecutionsTable {
  id: string;
  workspace_id: string;
  flow_id: string;
  flow_version: number;
  contact_id: string;
  phone_number_id: string;
  chat_id: string | null;
  trigger_id: string;
  trigger_message_id: string | null;
  status: ExecutionStatusValue;
  current_node_id: string | null;
  wait_kind: WaitKind | null;
  wait_state: NullableJson<unknown>;
  resume: NullableJson<unknown>;
  vars: ColumnType<Record<string, unknown>, string | undefined, string>;
  fire_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  leased_by: string | null;
  step_count: Generated<number>;
  error: NullableJson<unknown>;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface AutomationStepsTable {
  id: Generated<string>;
  execution_id: string;
  seq: number;
  node_id: string;
  node_type: string;
  status: 'completed' | 'waiting' | 'failed';
  port: string | null;
  message_id: string | null;
  detail: string | null;
  error: NullableJson<unknown>;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface AutomationInboundClaimsTable {
  message_id: string;
  /** Null while the message is due for dispatch; then the instance that claimed it. */
  instance_id: string | null;
  claimed_at: NullableTimestamp;
  received_at: Timestamp;
}

export interface AutomationSequencesTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  phone_number_id: string | null;
  name: string;
  status: 'active' | 'inactive';
  trigger: Json<unknown>;
  steps: Json<unknown>;
  stop_on_reply: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AutomationSequenceEnrolmentsTable {
  id: string;
  sequence_id: string;
  workspace_id: string;
  contact_id: string;
  phone_number_id: string;
  status: 'active' | 'completed' | 'stopped' | 'failed';
  next_step: number;
  fire_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  leased_by: string | null;
  error: NullableJson<unknown>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AutomationTables {
  automation_flows: AutomationFlowsTable;
  automation_flow_versions: AutomationFlowVersionsTable;
  automation_executions: AutomationExecutionsTable;
  automation_steps: AutomationStepsTable;
  automation_inbound_claims: AutomationInboundClaimsTable;
  automation_sequences: AutomationSequencesTable;
  automation_sequence_enrolments: AutomationSequenceEnrolmentsTable;
}
