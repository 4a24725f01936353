// Automation flows: CRUD validated against the node-type catalogue, activation, dry runs and the
// executions of real runs; plus the drip sequences' listing (sequences.ts).
import type { Kysely } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, encodeCursor } from '#server/lib/cursor.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { findAccount } from '../configuration/accounts.js';
import { catalogue } from './catalog.js';
import type { ContactState } from './contact-state.js';
import { dryRun } from './dry-run.js';
import { cancelRuns, loadGraph } from './runner.js';
import { createSequence } from './sequence-create.js';
import { updateSequence } from './sequence-update.js';
import { listSequences } from './sequences.js';
import { checkGraph, checkReferences, formIdHints, invalidFlow, type Finding, type FlowGraph } from './validate.js';
import { executionView, flowSummaryView, flowView, MAX_LISTED_STEPS, type FlowRow } from './views.js';

type S = components['schemas'];

const flowNotFound = (id: string) => new HttpProblem(404, 'not-found', `No flow ${id} in this workspace.`);

async function flowById(db: Kysely<Database>, workspaceId: string, flowId: string): Promise<FlowRow> {
  const row = await db.selectFrom('automation_flows').selectAll().where('id', '=', flowId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw flowNotFound(flowId);
  return row;
}

async function graphOf(platform: Platform, row: FlowRow): Promise<FlowGraph> {
  const graph = await loadGraph(platform, row.id, row.version);
  if (!graph) throw new Error(`flow ${row.id} has no version ${row.version}`);
  return graph;
}

/** The account and number a flow listens on (404 naming the field for another workspace's). */
async function scopeOf(db: Kysely<Database>, workspaceId: string, body: { waba_id: string; phone_number_id?: string }) {
  const account = await findAccount(db, workspaceId, body.waba_id);
  if (body.phone_number_id === undefined) return { account, phoneNumberId: null };
  const number = await db
    .selectFrom('phone_numbers')
    .select('id')
    .where('id', '=', body.phone_number_id)
    .where('workspace_id', '=', workspaceId)
    .where('business_account_id', '=', account.id)
    .executeTakeFirst();
  if (!number) {
    throw new HttpProblem(404, 'not-found', `No phone number ${body.phone_number_id} in business account ${account.id} of this workspace.`, {
      errors: [{ pointer: '/body/phone_number_id', detail: 'is not a number of this business account' }],
    });
  }
  return { account, phoneNumberId: number.id };
}

/** Structure first; what the flow references only once the structure holds (422 otherwise). */
async function validateFlow(platform: Platform, workspaceId: string, accountId: string, graph: FlowGraph, requireApproved: boolean): Promise<void> {
  const hints = formIdHints(graph);
  const hinted = new Set(hints.map((h) => h.pointer));
  const structure: Finding[] = [...hints, ...checkGraph(graph).filter((f) => !hinted.has(f.pointer))];
  if (structure.length) throw invalidFlow(structure);
  const references = await checkReferences(platform, platform.store.db, workspaceId, accountId, graph, requireApproved);
  if (references.length) throw invalidFlow(references);
}

const graphOfBody = (body: { triggers: S['FlowTrigger'][]; nodes: S['FlowNode'][]; connections: S['FlowConnection'][] }): FlowGraph => ({
  triggers: body.triggers,
  nodes: body.nodes,
  // Stored with the default port spelled out, as the contract shows it.
  connections: body.connections.map((c) => ({ from_node: c.from_node, from_port: c.from_port ?? 'out', to_node: c.to_node })),
});

const listNodeTypes: Handler<operations['listNodeTypes']> = async (request) => {
  authOf(request);
  const { version, data } = catalogue();
  return { version, data };
};

const listFlows: Handler<operations['listFlows']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { waba_id: wabaId, status, limit = 20, cursor } = (request.query ?? {}) as NonNullable<operations['listFlows']['parameters']['query']>;
  const scope = { workspaceId, operation: 'listFlows' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = db.selectFrom('automation_flows').selectAll().where('workspace_id', '=', workspaceId);
  if (wabaId !== undefined) query = query.where('business_account_id', '=', (await findAccount(db, workspaceId, wabaId)).id);
  if (status) query = query.where('status', '=', status);
  if (after) query = query.where((eb) => eb(eb.refTuple('updated_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    data: await Promise.all(page.map(async (row) => flowSummaryView(row, await graphOf(platform, row)))),
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(platform.secrets, scope, { t: new Date(last.updated_at).toISOString(), id: last.id }) : null,
  };
};

const createFlow: Handler<operations['createFlow']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const { account, phoneNumberId } = await scopeOf(db, workspaceId, body);
  const graph = graphOfBody(body);
  const status = body.status ?? 'inactive';
  await validateFlow(platform, workspaceId, account.id, graph, status === 'active');
  const now = platform.now();
  const id = newId('flow');
  const row = await db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto('automation_flows')
      .values({
        id,
        workspace_id: workspaceId,
        business_account_id: account.id,
        phone_number_id: phoneNumberId,
        name: body.name,
        description: body.description ?? null,
        status,
        priority: body.priority ?? 0,
        version: 1,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('automation_flow_versions')
      .values({ flow_id: id, version: 1, graph: JSON.stringify(graph), created_at: now })
      .execute();
    return created;
  });
  reply.code(201);
  return flowView(row, graph);
};

const getFlow: Handler<operations['getFlow']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const row = await flowById(platform.store.db, workspaceId, request.params.flowId);
  return flowView(row, await graphOf(platform, row));
};

const updateFlow: Handler<operations['updateFlow']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const current = await flowById(db, workspaceId, request.params.flowId);
  const stale = () =>
    new HttpProblem(409, 'conflict', `The flow is at version ${current.version}; this edit is based on version ${body.version}. Reload it and retry.`);
  if (body.version !== undefined && body.version !== current.version) throw stale();
  const { account, phoneNumberId } = await scopeOf(db, workspaceId, body);
  const graph = graphOfBody(body);
  await validateFlow(platform, workspaceId, account.id, graph, current.status === 'active');
  const now = platform.now();
  const row = await db.transaction().execute(async (trx) => {
    // Conditional on the version read: a concurrent save makes this one a 409, never a lost update.
    const updated = await trx
      .updateTable('automation_flows')
      .set({
        name: body.name,
        description: body.description ?? null,
        business_account_id: account.id,
        phone_number_id: phoneNumberId,
        ...(body.priority !== undefined ? { priority: body.priority } : {}),
        version: current.version + 1,
        updated_at: now,
      })
      .where('id', '=', current.id)
      .where('version', '=', current.version)
      .returningAll()
      .executeTakeFirst();
    if (!updated) return null;
    await trx
      .insertInto('automation_flow_versions')
      .values({ flow_id: current.id, version: updated.version, graph: JSON.stringify(graph), created_at: now })
      .execute();
    return updated;
  });
  if (!row) throw new HttpProblem(409, 'conflict', 'The flow was saved by someone else meanwhile. Reload it and retry.');
  return flowView(row, graph);
};

const deleteFlow: Handler<operations['deleteFlow']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  // Executions and versions go with the flow (cascade); a run mid-node stops at its next commit.
  const deleted = await db
    .deleteFrom('automation_flows')
    .where('id', '=', request.params.flowId)
    .where('workspace_id', '=', workspaceId)
    .returning('id')
    .executeTakeFirst();
  if (!deleted) throw flowNotFound(request.params.flowId);
  return reply.code(204).send();
};

const toggleFlow: Handler<operations['toggleFlow']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const row = await flowById(db, workspaceId, request.params.flowId);
  const graph = await graphOf(platform, row);
  const now = platform.now();
  if (request.body.active) {
    const findings = await checkReferences(platform, db, workspaceId, row.business_account_id, graph, true);
    if (findings.length) {
      const problem = invalidFlow(findings, 'Flow cannot be activated');
      throw new HttpProblem(422, 'unprocessable', problem.message, { title: 'Flow cannot be activated', errors: problem.problem.errors });
    }
  }
  const status = request.body.active ? 'active' : 'inactive';
  const updated = await db.transaction().execute(async (trx) => {
    const changed = await trx
      .updateTable('automation_flows')
      .set({ status, updated_at: now })
      .where('id', '=', row.id)
      .where('status', '!=', status)
      .returningAll()
      .executeTakeFirst();
    if (changed && status === 'inactive') await cancelRuns(trx, row.id, now, 'The flow was deactivated.');
    return changed;
  });
  return flowView(updated ?? row, graph);
};

const testFlow: Handler<operations['testFlow']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const row = await flowById(db, workspaceId, request.params.flowId);
  if (body.contact_id !== undefined && body.contact !== undefined) {
    throw new HttpProblem(400, 'validation', 'Give either contact_id or contact, not both.', {
      errors: [{ pointer: '/body/contact', detail: 'must not be given together with contact_id' }],
    });
  }
  let contact: ContactState;
  let firstMessage = true;
  if (body.contact_id !== undefined) {
    const c = await db
      .selectFrom('contacts')
      .select(['id', 'name', 'phone', 'email', 'custom_fields'])
      .where('id', '=', body.contact_id)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    if (!c)
      throw new HttpProblem(404, 'not-found', `No contact ${body.contact_id} in this workspace.`, {
        errors: [{ pointer: '/body/contact_id', detail: 'unknown contact' }],
      });
    const tags = await db.selectFrom('contact_tags').select('tag_id').where('contact_id', '=', c.id).execute();
    const earlier = await db.selectFrom('messages').select('id').where('contact_id', '=', c.id).where('direction', '=', 'inbound').limit(1).executeTakeFirst();
    firstMessage = !earlier;
    contact = { id: c.id, name: c.name, phone: c.phone, email: c.email, fields: { ...(c.custom_fields ?? {}) }, tags: new Set(tags.map((t) => t.tag_id)) };
  } else {
    const h = body.contact ?? {};
    const fields: Record<string, string> = { ...(h.fields ?? {}) };
    contact = {
      id: null,
      name: h.name ?? fields.name ?? null,
      phone: h.contact_no ?? null,
      email: fields.email ?? null,
      fields,
      tags: new Set(h.tag_ids ?? []),
    };
    delete fields.name;
    delete fields.email;
  }
  return dryRun(platform, workspaceId, row, await graphOf(platform, row), body.message, contact, body.replies ?? [], firstMessage);
};

const listFlowExecutions: Handler<operations['listFlowExecutions']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const flow = await flowById(db, workspaceId, request.params.flowId);
  const { status, contact_id: contactId, limit = 20, cursor } = (request.query ?? {}) as NonNullable<operations['listFlowExecutions']['parameters']['query']>;
  const scope = { workspaceId, operation: `listFlowExecutions:${flow.id}` };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = db.selectFrom('automation_executions').selectAll().where('flow_id', '=', flow.id).where('workspace_id', '=', workspaceId);
  if (status) query = query.where('status', '=', status);
  if (contactId) query = query.where('contact_id', '=', contactId);
  if (after) query = query.where((eb) => eb(eb.refTuple('started_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const steps = page.length
    ? await db
        .selectFrom('automation_steps')
        .selectAll()
        .where(
          'execution_id',
          'in',
          page.map((r) => r.id),
        )
        .where('seq', '<=', MAX_LISTED_STEPS)
        .orderBy('execution_id')
        .orderBy('seq')
        .execute()
    : [];
  const last = page.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    data: page.map((r) =>
      executionView(
        r,
        steps.filter((s) => s.execution_id === r.id),
      ),
    ),
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(platform.secrets, scope, { t: new Date(last.started_at).toISOString(), id: last.id }) : null,
  };
};

export const automationHandlers: Handlers<operations> = {
  listNodeTypes,
  listFlows,
  createFlow,
  getFlow,
  updateFlow,
  deleteFlow,
  toggleFlow,
  testFlow,
  listFlowExecutions,
  listSequences,
  createSequence,
  updateSequence,
};
