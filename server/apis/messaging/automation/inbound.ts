// The automation's inbound responders: order 10 resumes a run waiting for this contact's reply
// (or form submission); order 20 starts the first active flow with a matching trigger, in the
// order the API shows (the flow's `priority`, highest first; then `created_at`, then `id`), so
// which flow answers never depends on chance. Opt-out keywords never get here (order 0).
import type { FastifyInstance } from 'fastify';
import { sql, type SqlBool } from 'kysely';
import type { Platform } from '#server/platform.js';
import type { Inbound } from './engine.js';
import { registerInboundResponder, type InboundMessage } from './responders.js';
import { loadGraph, resumeWithReply, startRun, type RunnerHooks } from './runner.js';
import { triggerMatches } from './triggers.js';

/** The stored message as a node sees it (full text, the clicked id, a form's answers). */
export async function inboundOf(platform: Platform, message: InboundMessage): Promise<Inbound & { chatId: string | null }> {
  const row = await platform.store.db.selectFrom('messages').select(['type', 'content', 'chat_id']).where('id', '=', message.messageId).executeTakeFirst();
  const content = (row?.content ?? {}) as {
    text?: unknown;
    reply?: { id?: unknown; title?: unknown };
    form_response?: { response?: unknown; flow_token?: unknown };
  };
  const replyTitle = typeof content.reply?.title === 'string' ? content.reply.title : null;
  const response = content.form_response?.response;
  return {
    type: row?.type ?? message.type,
    text: typeof content.text === 'string' ? content.text : (replyTitle ?? message.text ?? null),
    replyId: typeof content.reply?.id === 'string' ? content.reply.id : (message.interactiveReplyId ?? null),
    formResponse: response && typeof response === 'object' && !Array.isArray(response) ? (response as Record<string, unknown>) : null,
    chatId: row?.chat_id ?? null,
  };
}

async function resumeWaiting(platform: Platform, message: InboundMessage, hooks: RunnerHooks): Promise<boolean> {
  const waiting = await platform.store.db
    .selectFrom('automation_executions')
    .select(['id', 'wait_kind'])
    .where('workspace_id', '=', message.workspaceId)
    .where('contact_id', '=', message.contactId)
    .where('phone_number_id', '=', message.phoneNumberId)
    // Literals: a generic plan can then use automation_executions_waiting (`where status =
    // 'waiting'`); with parameters this query, run on every inbound message, was planned every time.
    .where(sql<SqlBool>`status = 'waiting' and wait_kind in ('reply', 'form')`)
    .orderBy('started_at', 'desc')
    .execute();
  if (!waiting.length) return false;
  const inbound = await inboundOf(platform, message);
  for (const run of waiting) {
    // A form waits for its submission; other messages go on to the other responders.
    if (run.wait_kind === 'form' && inbound.type !== 'form_response') continue;
    // A submission carries the run's id as its flow token: another run's form does not resume this one.
    const token = inbound.formResponse?.flow_token;
    if (run.wait_kind === 'form' && typeof token === 'string' && token !== run.id) continue;
    if (await resumeWithReply(platform, run.id, inbound, hooks)) return true;
  }
  return false;
}

async function startMatchingFlow(platform: Platform, message: InboundMessage, hooks: RunnerHooks): Promise<boolean> {
  const db = platform.store.db;
  if (!message.businessAccountId) return false;
  const flows = await db
    .selectFrom('automation_flows')
    .select(['id', 'version'])
    .where('workspace_id', '=', message.workspaceId)
    .where('business_account_id', '=', message.businessAccountId)
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('phone_number_id', 'is', null), eb('phone_number_id', '=', message.phoneNumberId)]))
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  if (!flows.length) return false;
  const inbound = await inboundOf(platform, message);
  let first: boolean | undefined;
  const firstMessage = async () => {
    if (first === undefined) {
      const earlier = await db
        .selectFrom('messages')
        .select('id')
        .where('contact_id', '=', message.contactId)
        .where('direction', '=', 'inbound')
        .where('id', '!=', message.messageId)
        .limit(1)
        .executeTakeFirst();
      first = !earlier;
    }
    return first;
  };
  for (const flow of flows) {
    const graph = await loadGraph(platform, flow.id, flow.version);
    if (!graph) continue;
    for (const trigger of graph.triggers) {
      const needsFirst = (trigger.parameters as { new_contacts_only?: boolean }).new_contacts_only === true;
      const input = { type: inbound.type, text: inbound.text, replyId: inbound.replyId, firstMessage: needsFirst ? await firstMessage() : false };
      if (!triggerMatches(trigger, input)) continue;
      await startRun(
        platform,
        {
          workspaceId: message.workspaceId,
          flowId: flow.id,
          version: flow.version,
          graph,
          triggerId: trigger.id,
          triggerType: trigger.type,
          contactId: message.contactId,
          phoneNumberId: message.phoneNumberId,
          messageId: message.messageId,
          chatId: inbound.chatId,
          text: inbound.text,
        },
        hooks,
      );
      return true;
    }
  }
  return false;
}

export function registerAutomationResponders(app: FastifyInstance, hooks: RunnerHooks): () => void {
  const offs = [
    registerInboundResponder(app, { name: 'automation.waiting_run', order: 10, respond: (platform, message) => resumeWaiting(platform, message, hooks) }),
    registerInboundResponder(app, { name: 'automation.flow_trigger', order: 20, respond: (platform, message) => startMatchingFlow(platform, message, hooks) }),
  ];
  return () => offs.forEach((off) => off());
}
