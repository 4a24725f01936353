// Real runs of flows. A run is one `automation_executions` row moved node by node: every step is
// committed before the next node runs, under a lease (status `running`, `leased_by`,
// `lease_until`), so a run whose instance died is re-taken from its current node after the lease
// (the node may then run twice: at-least-once). Waits (ask, start_form, delay) leave the row
// `waiting` with `fire_at`; a reply (inbound responder) or the timer worker moves it back to
// `running` with one conditional UPDATE, so a reply racing its timeout resumes it exactly once.
import { sql } from 'kysely';
import { newId } from '#server/lib/ids.js';
import type { Platform } from '#server/platform.js';
import type { ExecutionStatusValue } from '#server/store/schema/automation.js';
import { readingSettings } from '../configuration/messaging-settings.js';
import { answerLocale } from './answers.js';
import type { RunState } from './contact-state.js';
import { realEffects } from './effects.js';
import { runNode, type ExecutionError, type Inbound, type NodeInput, type NodeResult } from './engine.js';
import type { FlowGraph } from './validate.js';

export const LEASE_MS = 60_000;
/** A run with more node runs than this without waiting is stopped (validation rules out such loops). */
const MAX_STEPS_PER_DRIVE = 1000;
const TRIGGER_KEY = '$trigger';
const REPLY_KEY = '$reply';

/** What a run tells its instance; given by the caller, which has them from automation's setup. */
export interface RunnerHooks {
  /** Tells the timer worker of a new wait (so a short delay fires on time). */
  waited?: (fireAt: Date) => void;
  log?: (message: string, extra?: object) => void;
}

const graphs = new Map<string, FlowGraph>();
/** A saved version of a flow (versions never change, so they are cached). */
export async function loadGraph(platform: Platform, flowId: string, version: number): Promise<FlowGraph | null> {
  const key = `${flowId}:${version}`;
  const cached = graphs.get(key);
  if (cached) return cached;
  const row = await platform.store.db
    .selectFrom('automation_flow_versions')
    .select('graph')
    .where('flow_id', '=', flowId)
    .where('version', '=', version)
    .executeTakeFirst();
  if (!row) return null;
  const graph = row.graph as FlowGraph;
  if (graphs.size > 500) graphs.clear();
  graphs.set(key, graph);
  return graph;
}

/** The node a port leads to, or null (the run ends there). */
export function target(graph: FlowGraph, from: string, port: string | null): string | null {
  if (port === null) return null;
  return graph.connections.find((c) => c.from_node === from && (c.from_port ?? 'out') === port)?.to_node ?? null;
}

async function loadContact(platform: Platform, workspaceId: string, contactId: string) {
  const db = platform.store.db;
  const [contact, tags] = await Promise.all([
    db
      .selectFrom('contacts')
      .select(['id', 'name', 'phone', 'email', 'custom_fields'])
      .where('id', '=', contactId)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst(),
    db.selectFrom('contact_tags').select('tag_id').where('contact_id', '=', contactId).execute(),
  ]);
  if (!contact) return null;
  return {
    id: contact.id,
    name: contact.name,
    phone: contact.phone,
    email: contact.email,
    fields: { ...(contact.custom_fields ?? {}) },
    tags: new Set(tags.map((t) => t.tag_id)),
  };
}

export interface StartRun {
  workspaceId: string;
  flowId: string;
  version: number;
  graph: FlowGraph;
  triggerId: string;
  triggerType: string;
  contactId: string;
  phoneNumberId: string;
  messageId: string | null;
  chatId: string | null;
  text: string | null;
}

/** Starts a run at a trigger and drives it until it waits or ends. */
export async function startRun(platform: Platform, run: StartRun, hooks: RunnerHooks): Promise<string> {
  const db = platform.store.db;
  const now = platform.now();
  const id = newId('exe');
  const first = target(run.graph, run.triggerId, 'out');
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('automation_executions')
      .values({
        id,
        workspace_id: run.workspaceId,
        flow_id: run.flowId,
        flow_version: run.version,
        contact_id: run.contactId,
        phone_number_id: run.phoneNumberId,
        chat_id: run.chatId,
        trigger_id: run.triggerId,
        trigger_message_id: run.messageId,
        status: first ? 'running' : 'completed',
        current_node_id: first,
        resume: JSON.stringify({ kind: 'enter' }),
        vars: JSON.stringify({ [TRIGGER_KEY]: run.text }),
        lease_until: first ? new Date(now.getTime() + LEASE_MS) : null,
        leased_by: first ? platform.instanceId : null,
        step_count: 1,
        started_at: now,
        finished_at: first ? null : now,
      })
      .execute();
    await trx
      .insertInto('automation_steps')
      .values({
        execution_id: id,
        seq: 1,
        node_id: run.triggerId,
        node_type: run.triggerType,
        status: 'completed',
        port: 'out',
        message_id: null,
        detail: 'the trigger matched',
        started_at: now,
        finished_at: now,
      })
      .execute();
    await trx.updateTable('automation_flows').set({ last_execution_at: now }).where('id', '=', run.flowId).execute();
  });
  if (first) await drive(platform, id, hooks);
  return id;
}

/** Moves a waiting run back to running with `input`; false when it was no longer waiting (someone else resumed it). */
export async function takeWaiting(platform: Platform, executionId: string, input: NodeInput): Promise<boolean> {
  const now = platform.now();
  const row = await platform.store.db
    .updateTable('automation_executions')
    .set({ status: 'running', leased_by: platform.instanceId, lease_until: new Date(now.getTime() + LEASE_MS), resume: JSON.stringify(input) })
    .where('id', '=', executionId)
    .where('status', '=', 'waiting')
    .returning('id')
    .executeTakeFirst();
  return Boolean(row);
}

/** Resumes a waiting run with a reply and drives it; false when another instance or the timer got there first. */
export async function resumeWithReply(platform: Platform, executionId: string, reply: Inbound, hooks: RunnerHooks): Promise<boolean> {
  if (!(await takeWaiting(platform, executionId, { kind: 'reply', reply }))) return false;
  await drive(platform, executionId, hooks);
  return true;
}

type Row = Awaited<ReturnType<typeof loadRow>>;
function loadRow(platform: Platform, id: string) {
  return platform.store.db
    .selectFrom('automation_executions')
    .selectAll()
    .where('id', '=', id)
    .where('status', '=', 'running')
    .where('leased_by', '=', platform.instanceId)
    .executeTakeFirst();
}

/** Runs the leased execution node by node until it waits, ends, fails or is cancelled. */
export async function drive(platform: Platform, executionId: string, hooks: RunnerHooks): Promise<void> {
  const { log } = hooks;
  let row: Row = await loadRow(platform, executionId);
  if (!row) return;
  const graph = await loadGraph(platform, row.flow_id, row.flow_version);
  const contact = await loadContact(platform, row.workspace_id, row.contact_id);
  if (!graph || !contact)
    return void (await finish(platform, row, 'failed', {
      code: 'internal',
      message: graph ? 'The contact no longer exists.' : 'The flow version no longer exists.',
      node_id: row.current_node_id,
    }));
  const vars = { ...(row.vars ?? {}) };
  const state: RunState = {
    contact,
    vars,
    trigger: { text: (vars[TRIGGER_KEY] as string | null) ?? null },
    reply: (vars[REPLY_KEY] as RunState['reply']) ?? null,
    ...(await readingSettings(platform.store.db, row.workspace_id)),
  };
  state.writeLocale = answerLocale(undefined, contact.phone, state.locale);
  const effects = realEffects(platform, { workspaceId: row.workspace_id, phoneNumberId: row.phone_number_id, contact });
  for (let i = 0; i < MAX_STEPS_PER_DRIVE && row; i++) {
    const nodeId = row.current_node_id;
    if (!nodeId) return void (await finish(platform, row, 'completed', null));
    const node = graph.nodes.find((n) => n.id === nodeId);
    if (!node)
      return void (await finish(platform, row, 'failed', {
        code: 'internal',
        message: `Node ${nodeId} is not in version ${row.flow_version}.`,
        node_id: nodeId,
      }));
    const input = (row.resume as NodeInput | null) ?? { kind: 'enter' };
    const startedAt = platform.now();
    let result: NodeResult;
    try {
      result = await runNode(node, input, state, effects, startedAt, (row.wait_state as Record<string, unknown> | null) ?? null, row.id);
    } catch (error) {
      log?.('automation node failed', { executionId, nodeId, error: String(error) });
      result = { kind: 'fail', error: { code: 'internal', message: 'The node failed unexpectedly.', node_id: nodeId } };
    }
    vars[REPLY_KEY] = state.reply;
    const resumed = input.kind !== 'enter';
    if (!(await persist(platform, row, node.type, graph, result, startedAt, resumed, vars, hooks))) return;
    if (result.kind !== 'next') return;
    row = await loadRow(platform, executionId);
  }
  if (row)
    await finish(platform, row, 'failed', {
      code: 'internal',
      message: `More than ${MAX_STEPS_PER_DRIVE} steps without a wait.`,
      node_id: row.current_node_id,
    });
}

/** Commits one step; false when the run is no longer this instance's to move (cancelled, deleted, re-leased). */
async function persist(
  platform: Platform,
  row: NonNullable<Row>,
  nodeType: string,
  graph: FlowGraph,
  result: NodeResult,
  startedAt: Date,
  resumed: boolean,
  vars: Record<string, unknown>,
  hooks: RunnerHooks,
): Promise<boolean> {
  const db = platform.store.db;
  const now = platform.now();
  const nodeId = row.current_node_id!;
  const ok = await db.transaction().execute(async (trx) => {
    // The waiting step of this node, when the run resumes one.
    const waiting = resumed
      ? await trx
          .selectFrom('automation_steps')
          .select(['id', 'message_id'])
          .where('execution_id', '=', row.id)
          .where('status', '=', 'waiting')
          .orderBy('seq', 'desc')
          .limit(1)
          .executeTakeFirst()
      : undefined;
    const base = trx.updateTable('automation_executions').where('id', '=', row.id).where('status', '=', 'running').where('leased_by', '=', platform.instanceId);
    const newStep = waiting ? 0 : 1;
    let updated;
    if (result.kind === 'next') {
      const to = target(graph, nodeId, result.port);
      updated = await base
        .set({
          status: to ? 'running' : 'completed',
          current_node_id: to,
          resume: JSON.stringify({ kind: 'enter' }),
          wait_kind: null,
          wait_state: null,
          fire_at: null,
          vars: JSON.stringify(vars),
          lease_until: to ? new Date(now.getTime() + LEASE_MS) : null,
          leased_by: to ? platform.instanceId : null,
          finished_at: to ? null : now,
          step_count: sql`step_count + ${newStep}`,
        })
        .returning('step_count')
        .executeTakeFirst();
    } else if (result.kind === 'wait' || result.kind === 'stay') {
      updated = await base
        .set({
          status: 'waiting',
          resume: null,
          wait_state: JSON.stringify(result.waitState),
          vars: JSON.stringify(vars),
          lease_until: null,
          leased_by: null,
          ...(result.kind === 'wait' ? { wait_kind: result.waitKind, fire_at: result.fireAt } : {}),
          step_count: sql`step_count + ${newStep}`,
        })
        .returning('step_count')
        .executeTakeFirst();
    } else {
      updated = await base
        .set({
          status: 'failed',
          error: JSON.stringify(result.error),
          current_node_id: null,
          resume: null,
          fire_at: null,
          wait_kind: null,
          lease_until: null,
          leased_by: null,
          finished_at: now,
          vars: JSON.stringify(vars),
          step_count: sql`step_count + ${newStep}`,
        })
        .returning('step_count')
        .executeTakeFirst();
    }
    if (!updated) return false;
    const stepStatus = result.kind === 'next' ? 'completed' : result.kind === 'fail' ? 'failed' : 'waiting';
    const fields = {
      status: stepStatus as 'completed' | 'failed' | 'waiting',
      port: result.kind === 'next' ? result.port : null,
      detail: 'detail' in result ? result.detail : result.error.message,
      error: result.kind === 'fail' ? JSON.stringify(result.error) : result.kind === 'next' && result.error ? JSON.stringify(result.error) : null,
      finished_at: stepStatus === 'waiting' ? null : now,
    };
    const messageId = 'messageId' in result ? result.messageId : null;
    if (waiting) {
      await trx
        .updateTable('automation_steps')
        .set({ ...fields, message_id: waiting.message_id ?? messageId })
        .where('id', '=', waiting.id)
        .execute();
    } else {
      await trx
        .insertInto('automation_steps')
        .values({
          execution_id: row.id,
          seq: updated.step_count,
          node_id: nodeId,
          node_type: nodeType,
          started_at: startedAt,
          message_id: messageId,
          ...fields,
        })
        .execute();
    }
    return true;
  });
  if (ok && result.kind === 'wait') hooks.waited?.(result.fireAt);
  return ok;
}

async function finish(platform: Platform, row: NonNullable<Row>, status: ExecutionStatusValue, error: ExecutionError | null): Promise<void> {
  await platform.store.db
    .updateTable('automation_executions')
    .set({
      status,
      error: error ? JSON.stringify(error) : null,
      current_node_id: null,
      resume: null,
      fire_at: null,
      lease_until: null,
      leased_by: null,
      finished_at: platform.now(),
    })
    .where('id', '=', row.id)
    .where('status', '=', 'running')
    .where('leased_by', '=', platform.instanceId)
    .execute();
}

/** Cancels a flow's waiting and running executions (deactivation, deletion). */
export async function cancelRuns(db: Platform['store']['db'], flowId: string, now: Date, reason: string): Promise<number> {
  const rows = await db
    .updateTable('automation_executions')
    .set({
      status: 'cancelled',
      error: JSON.stringify({ code: 'cancelled', message: reason, node_id: null }),
      fire_at: null,
      lease_until: null,
      leased_by: null,
      resume: null,
      finished_at: now,
    })
    .where('flow_id', '=', flowId)
    .where('status', 'in', ['waiting', 'running'])
    .returning('id')
    .execute();
  return rows.length;
}
