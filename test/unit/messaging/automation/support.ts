// Fixtures of the automation tests: a workspace with a sandbox number and approved templates
// (the campaign fixtures), tags, flows created through the API, and simulated inbound messages.
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { until, workspace, type Workspace } from '../campaigns/support.js';

export { until, workspace, type Workspace };

export function api(app: FastifyInstance, key: string) {
  return (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: { 'x-api-key': key }, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

export async function addTag(app: FastifyInstance, workspaceId: string, name: string): Promise<string> {
  const id = newId('tag');
  await app.platform.store.db.insertInto('tags').values({ id, workspace_id: workspaceId, name }).execute();
  return id;
}

export async function templateId(app: FastifyInstance, workspaceId: string, name: string): Promise<string> {
  const row = await app.platform.store.db
    .selectFrom('message_templates')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return row.id;
}

type Graph = { triggers: unknown[]; nodes: unknown[]; connections: unknown[] };

export async function createFlow(app: FastifyInstance, w: Workspace, graph: Graph, extra: Record<string, unknown> = {}) {
  const res = await api(app, w.key)('POST', '/api/automation', { name: 'Test flow', waba_id: w.accountId, status: 'active', ...graph, ...extra });
  if (res.statusCode !== 201) throw new Error(`createFlow ${res.statusCode} ${res.body}`);
  return res.json() as { id: string; version: number; status: string };
}

/** A customer's text through the sandbox's signed inbound path; answers the stored message. */
export function inboundText(app: FastifyInstance, w: Workspace, from: string, text: string) {
  return sendFromSandboxPhone(app, { phoneNumberId: w.numberId, from, text });
}

/** A click on an interactive reply button. */
export async function inboundButton(app: FastifyInstance, w: Workspace, from: string, id: string, title: string) {
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  const number = await app.platform.store.db
    .selectFrom('phone_numbers')
    .select('provider_phone_number_id')
    .where('id', '=', w.numberId)
    .executeTakeFirstOrThrow();
  return sandbox.simulateInbound({
    phoneNumberId: number.provider_phone_number_id,
    from,
    message: { type: 'interactive', interactive: { type: 'button_reply', button_reply: { id, title } } } as never,
  });
}

export async function outbound(app: FastifyInstance, contactPhone: string) {
  const db = app.platform.store.db;
  return db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.id', 'messages.type', 'messages.content', 'messages.status'])
    .where('contacts.phone', '=', contactPhone)
    .where('messages.direction', '=', 'outbound')
    .orderBy('messages.created_at')
    .execute();
}

export async function executions(app: FastifyInstance, flowId: string) {
  return app.platform.store.db.selectFrom('automation_executions').selectAll().where('flow_id', '=', flowId).orderBy('started_at').execute();
}
