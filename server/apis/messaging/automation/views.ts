// Rows of the automation tables in the contract's shapes.
import type { Selectable } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { AutomationExecutionsTable, AutomationFlowsTable, AutomationStepsTable } from '#server/store/schema/automation.js';
import type { FlowGraph } from './validate.js';

type S = components['schemas'];
export type FlowRow = Selectable<AutomationFlowsTable>;
export const MAX_LISTED_STEPS = 500;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const ms = (from: Date | string, to: Date | string | null) => (to === null ? null : new Date(to).getTime() - new Date(from).getTime());

export function flowView(row: FlowRow, graph: FlowGraph): S['Flow'] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    waba_id: row.business_account_id,
    phone_number_id: row.phone_number_id,
    status: row.status,
    priority: row.priority,
    version: row.version,
    triggers: graph.triggers,
    nodes: graph.nodes,
    connections: graph.connections,
    last_execution_at: iso(row.last_execution_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function flowSummaryView(row: FlowRow, graph: FlowGraph): S['FlowSummary'] {
  const { triggers, nodes, connections: _connections, ...rest } = flowView(row, graph);
  return { ...rest, trigger_types: [...new Set(triggers.map((t) => t.type))], node_count: nodes.length };
}

export function stepView(row: Selectable<AutomationStepsTable>): S['ExecutionStep'] {
  return {
    node_id: row.node_id,
    node_type: row.node_type,
    status: row.status,
    port: row.port,
    message_id: row.message_id,
    started_at: iso(row.started_at)!,
    finished_at: iso(row.finished_at),
    duration_ms: ms(row.started_at, row.finished_at),
    detail: row.detail,
    error: (row.error as S['ExecutionError'] | null) ?? null,
  };
}

export function executionView(row: Selectable<AutomationExecutionsTable>, steps: Selectable<AutomationStepsTable>[]): S['Execution'] {
  const done = row.status === 'completed' || row.status === 'failed' || row.status === 'cancelled';
  return {
    id: row.id,
    flow_id: row.flow_id,
    flow_version: row.flow_version,
    contact_id: row.contact_id,
    chat_id: row.chat_id,
    trigger_id: row.trigger_id,
    trigger_message_id: row.trigger_message_id,
    // A run re-taken after a crash is `running` again; the contract's states are the same.
    status: row.status,
    current_node_id: done ? null : row.current_node_id,
    resume_at: row.status === 'waiting' ? iso(row.fire_at) : null,
    started_at: iso(row.started_at)!,
    finished_at: done ? iso(row.finished_at) : null,
    duration_ms: done ? ms(row.started_at, row.finished_at) : null,
    error: (row.error as S['ExecutionError'] | null) ?? null,
    steps: steps.map(stepView),
    steps_truncated: row.step_count > MAX_LISTED_STEPS,
  };
}
