// POST /api/automation/{flowId}/test: the saved flow run against a simulated inbound message with
// effects that only record. Nothing is sent, stored or called: sends become `messages`, tags and
// fields change the in-memory contact only, `delay` is not waited, `http_request` is not called
// (it leaves through `success` with an empty response), `ask` and `start_form` take `replies`.
// What a send would be refused for is checked as the live run checks it: the message is built by
// the send path's own `sendParts` (templates found, approved, given every variable; media URLs)
// from the flow's number, and forms are looked up as the live node looks them up; a refusal
// fails the dry run with the error the live execution would record.
import type { components } from '#generated/messaging/types.js';
import type { Platform } from '#server/platform.js';
import { readingSettings } from '../configuration/messaging-settings.js';
import { answerLocale } from './answers.js';
import { formByFlowId } from '../forms/by-flow-id.js';
import { checkMediaUrls, sendParts } from '../outbound/parts.js';
import { resolveSender, type Sender } from '../sender.js';
import type { ContactState, RunState } from './contact-state.js';
import { sendError } from './effects.js';
import { NodeFailure, runNode, type Effects, type Inbound, type NodeInput, type SendBody } from './engine.js';
import { target } from './runner.js';
import { triggerMatches } from './triggers.js';
import type { FlowGraph } from './validate.js';

type S = components['schemas'];
type TestMessage = S['FlowTestMessage'];
type Result = S['FlowTestResult'];
type FlowOfTest = { id: string; version: number; business_account_id: string; phone_number_id: string | null };

/** At most this many nodes per dry run (validation already rules out loops without a wait). */
const MAX_STEPS = 500;

export function inboundOfTest(m: TestMessage): Inbound {
  switch (m.type) {
    case 'button_reply':
    case 'list_reply':
      return { type: 'interactive', text: m.reply_title ?? null, replyId: m.reply_id ?? null, formResponse: null };
    case 'form_submission':
      return { type: 'form_response', text: null, replyId: null, formResponse: (m.form_response as Record<string, unknown>) ?? {} };
    case 'media':
      return { type: 'image', text: m.text ?? null, replyId: null, formResponse: null };
    default:
      return { type: 'text', text: m.text ?? null, replyId: null, formResponse: null };
  }
}

/** The number a live run of the flow would send from: its own, else its account's first. */
async function flowSender(platform: Platform, workspaceId: string, flow: FlowOfTest): Promise<Sender | null> {
  const id =
    flow.phone_number_id ??
    (
      await platform.store.db
        .selectFrom('phone_numbers')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('business_account_id', '=', flow.business_account_id)
        .orderBy('created_at')
        .orderBy('id')
        .executeTakeFirst()
    )?.id;
  if (!id) return null;
  try {
    return await resolveSender(platform, workspaceId, id);
  } catch {
    return null; // no number to send from: the live flow never runs, nothing to compare with
  }
}

/** Builds the send as `deliver` would (without the 24-hour rule: the test's message just came in); a refusal is the live run's. */
async function checkSend(
  platform: Platform,
  workspaceId: string,
  sender: Sender,
  contact: ContactState,
  nodeId: string,
  body: Omit<SendBody, 'contact_no' | 'chatapp_phone_number'>,
) {
  const to = contact.phone ?? '';
  const recipient = { to, contact: { name: contact.name, email: contact.email, custom_fields: contact.fields } };
  try {
    const built = await sendParts(
      platform,
      workspaceId,
      sender,
      recipient,
      { ...body, contact_no: to, chatapp_phone_number: sender.number.id } as SendBody,
      platform.now(),
    );
    await checkMediaUrls(platform, built.mediaUrls);
  } catch (error) {
    const mapped = sendError(error, nodeId);
    if (mapped) throw new NodeFailure(mapped);
    throw error;
  }
}

function recordingEffects(
  platform: Platform,
  workspaceId: string,
  messages: S['FlowTestOutboundMessage'][],
  contact: ContactState,
  sender: Sender | null,
): Effects {
  return {
    dry: true,
    async send(nodeId, out) {
      if ('body' in out && sender) await checkSend(platform, workspaceId, sender, contact, nodeId, out.body);
      const payload = 'body' in out ? out.body : out.message;
      messages.push({ node_id: nodeId, type: out.kind, preview: out.preview, payload: payload as unknown as S['FlowTestOutboundMessage']['payload'] });
      return null;
    },
    async addTag() {},
    async removeTag() {},
    async setField(field, value) {
      if (field === 'name' || field === 'email') contact[field] = value === '' ? null : value;
      else if (value === '') delete contact.fields[field];
      else contact.fields[field] = value;
    },
    async http({ method, url }) {
      return { ok: true, status: null, json: null, detail: `not called in a test (${method} ${url.slice(0, 200)})` };
    },
    async assign({ strategy, agentId }) {
      return `not assigned in a test (${strategy}${agentId ? ` ${agentId}` : ''})`;
    },
    form: (flowId) => formByFlowId(platform.store.db, workspaceId, flowId),
    // Read-only: the template's current state decides whether the node would fail.
    async template(templateId) {
      return (
        (await platform.store.db
          .selectFrom('message_templates')
          .select(['name', 'status'])
          .where('id', '=', templateId)
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirst()) ?? null
      );
    },
  };
}

export async function dryRun(
  platform: Platform,
  workspaceId: string,
  flow: FlowOfTest,
  graph: FlowGraph,
  message: TestMessage,
  contact: ContactState,
  replies: TestMessage[],
  firstMessage: boolean,
): Promise<Result> {
  const inbound = inboundOfTest(message);
  const base = { flow_id: flow.id, flow_version: flow.version };
  const trigger = graph.triggers.find((t) => triggerMatches(t, { type: inbound.type, text: inbound.text, replyId: inbound.replyId, firstMessage }));
  if (!trigger) return { ...base, outcome: 'not_triggered', trigger_id: null, steps: [], messages: [], waiting_at: null, error: null };

  const messages: S['FlowTestOutboundMessage'][] = [];
  const steps: S['FlowTestStep'][] = [{ node_id: trigger.id, node_type: trigger.type, port: 'out', detail: 'the trigger matched', simulated: false }];
  const state: RunState = { contact, vars: {}, trigger: { text: inbound.text }, reply: null, ...(await readingSettings(platform.store.db, workspaceId)) };
  state.writeLocale = answerLocale(undefined, contact.phone, state.locale);
  const effects = recordingEffects(platform, workspaceId, messages, contact, await flowSender(platform, workspaceId, flow));
  const queue = [...replies];
  let current = target(graph, trigger.id, 'out');
  let input: NodeInput = { kind: 'enter' };
  let waitState: Record<string, unknown> | null = null;
  const now = platform.now();
  for (let i = 0; current && i < MAX_STEPS; i++) {
    const node = graph.nodes.find((n) => n.id === current)!;
    const result = await runNode(node, input, state, effects, now, waitState, null);
    if (result.kind === 'fail') {
      steps.push({ node_id: node.id, node_type: node.type, port: null, detail: result.error.message, simulated: false });
      return { ...base, outcome: 'failed', trigger_id: trigger.id, steps, messages, waiting_at: null, error: result.error };
    }
    if (result.kind === 'wait' || result.kind === 'stay') {
      if (result.kind === 'wait' && result.waitKind === 'delay') {
        // Not waited: the run goes on as if the timer had fired.
        const fired = await runNode(node, { kind: 'timeout' }, state, effects, now, result.waitState, null);
        steps.push({
          node_id: node.id,
          node_type: node.type,
          port: fired.kind === 'next' ? fired.port : null,
          detail: `${result.detail.replace('waiting', 'would wait')} (not waited in a test)`,
          simulated: true,
        });
        current = fired.kind === 'next' ? target(graph, node.id, fired.port) : null;
        input = { kind: 'enter' };
        waitState = null;
        continue;
      }
      const reply = queue.shift();
      if (!reply) {
        steps.push({ node_id: node.id, node_type: node.type, port: null, detail: `${result.detail}; no more replies in the test`, simulated: false });
        return { ...base, outcome: 'waiting', trigger_id: trigger.id, steps, messages, waiting_at: node.id, error: null };
      }
      if (result.kind === 'stay') steps.push({ node_id: node.id, node_type: node.type, port: null, detail: result.detail, simulated: false });
      input = { kind: 'reply', reply: inboundOfTest(reply) };
      waitState = result.waitState;
      i--;
      continue;
    }
    steps.push({ node_id: node.id, node_type: node.type, port: result.port, detail: result.detail, simulated: result.simulated });
    current = target(graph, node.id, result.port);
    input = { kind: 'enter' };
    waitState = null;
  }
  return { ...base, outcome: 'completed', trigger_id: trigger.id, steps, messages, waiting_at: null, error: null };
}
