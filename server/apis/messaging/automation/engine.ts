// What each node does, shared by real runs (runner.ts) and dry runs (dry-run.ts): the node sees
// the run's state and an `Effects` object; real effects send and write, dry effects only record.
// A node answers where the run goes on (a port), that it waits (ask, delay, start_form), that
// it keeps waiting (a wrong answer with retries left), or that it failed.
import type { components } from '#generated/messaging/types.js';
import type { CountryCode } from 'libphonenumber-js/min';
import type { OutboundMessage } from '#server/providers/types.js';
import type { SendableForm } from '../forms/by-flow-id.js';
import { answerLocale, type Parsed, parseDate, parseNumber, parsePhone } from './answers.js';
import { buttonsInteractive, listInteractive } from '../outbound/interactive.js';
import { type AnswerKind, evaluate, expand, KINDS_KEY, say, type ConditionRule, type RunState } from './contact-state.js';
import type { FlowNode } from './validate.js';

type S = components['schemas'];
export type ExecutionError = S['ExecutionError'];
export type SendBody = S['SendMessageRequest'];

/** A message a node sends: through `deliver` (text, media, template) or as an interactive message. */
export type Outbound =
  | { kind: 'text' | 'media' | 'template'; preview: string; body: DistributiveOmit<SendBody, 'contact_no' | 'chatapp_phone_number'> }
  | { kind: 'buttons' | 'list' | 'form'; preview: string; message: OutboundMessage };
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface Inbound {
  type: string;
  text: string | null;
  replyId: string | null;
  formResponse: Record<string, unknown> | null;
}

export type NodeInput = { kind: 'enter' } | { kind: 'reply'; reply: Inbound } | { kind: 'timeout' };

export interface HttpOutcome {
  ok: boolean;
  status: number | null;
  json: unknown;
  detail: string;
  /** Why a failed call failed: no answer in time, an address refused, no connection, or an answer outside 2xx. */
  failure?: 'timeout' | 'refused' | 'network' | 'http';
}

export interface Effects {
  readonly dry: boolean;
  /** Sends; answers the stored message id (null in a dry run). Throws a NodeFailure on refusal. */
  send(nodeId: string, message: Outbound): Promise<string | null>;
  addTag(tagId: string): Promise<void>;
  removeTag(tagId: string): Promise<void>;
  setField(field: string, value: string): Promise<void>;
  http(params: { method: string; url: string; headers: Record<string, string>; body?: string; timeoutMs: number }): Promise<HttpOutcome>;
  assign(params: { strategy: string; agentId?: string; note?: string }): Promise<string>;
  /** A template's name and language by id (for the message); null when it is gone. */
  template(templateId: string): Promise<{ name: string; status: string } | null>;
  /** A form by its provider Flow id (whether it can be sent, the screen it opens on); null when there is none. */
  form(flowId: string): Promise<SendableForm | null>;
}

/** A node failed; the run stops with this error. */
export class NodeFailure extends Error {
  constructor(readonly error: ExecutionError) {
    super(error.message);
  }
}

export type WaitKind = 'reply' | 'form' | 'delay';

export type NodeResult =
  | { kind: 'next'; port: string | null; detail: string; messageId: string | null; simulated: boolean; error?: ExecutionError }
  | { kind: 'wait'; waitKind: WaitKind; fireAt: Date; waitState: Record<string, unknown>; detail: string; messageId: string | null }
  | { kind: 'stay'; waitState: Record<string, unknown>; detail: string; messageId: string | null }
  | { kind: 'fail'; error: ExecutionError };

const UNIT_MS: Record<string, number> = { seconds: 1_000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 };
const MAX_DELAY_MS = 30 * 86_400_000;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** What an answer is read against: the locale of numbers and dates, the contact's phone, the time. */
export interface AnswerContext {
  locale: string;
  contactPhone: string | null;
  /** The workspace's country, for national numbers of a contact whose own country is unknown. */
  country?: CountryCode | null;
  now: Date;
}

/** The answer to an `ask` in the form its `expect` asks for, or why it does not fit. */
export function acceptAnswer(expect: string, reply: Inbound, context: AnswerContext): Parsed {
  const text = reply.text?.trim() ?? '';
  const fits = (value: string | null, reason: string): Parsed => (value ? { ok: true, value } : { ok: false, reason });
  if (expect !== 'any' && expect !== 'choice' && reply.type !== 'text') return { ok: false, reason: `a ${reply.type} message, not text` };
  switch (expect) {
    case 'choice':
      return fits(reply.replyId, 'not a button or list reply');
    case 'text':
      return fits(text || null, 'an empty text');
    case 'number':
      return parseNumber(text, context.locale);
    case 'email':
      return fits(EMAIL.test(text) && text.length <= 254 ? text.toLowerCase() : null, 'not an e-mail address');
    case 'phone':
      return parsePhone(text, context.contactPhone, context.country ?? null);
    case 'date':
      return parseDate(text, context.locale, context.now);
    default:
      return fits(reply.replyId ?? (text || reply.type), 'no answer');
  }
}

function interactiveBase(p: { body: string; header_text?: string; footer?: string }, state: RunState) {
  return {
    ...(p.header_text ? { header: { type: 'text' as const, text: say(p.header_text, state) } } : {}),
    body: { text: say(p.body, state) },
    ...(p.footer ? { footer: { text: say(p.footer, state) } } : {}),
  };
}

/** The body, header and footer of an interactive node, expanded, for the shared builders. */
function frameOf(p: { body: string; header_text?: string; footer?: string }, state: RunState) {
  return {
    body: say(p.body, state),
    ...(p.header_text ? { header: { type: 'text' as const, text: say(p.header_text, state) } } : {}),
    ...(p.footer ? { footer: say(p.footer, state) } : {}),
  };
}

/** Runs `node` once with `input`; `waitState` is what the node stored when it began waiting. */
export async function runNode(
  node: FlowNode,
  input: NodeInput,
  state: RunState,
  effects: Effects,
  now: Date,
  waitState: Record<string, unknown> | null,
  executionId: string | null,
): Promise<NodeResult> {
  const p = node.parameters as Record<string, any>;
  const next = (port: string | null, detail: string, messageId: string | null = null, simulated = false): NodeResult => ({
    kind: 'next',
    port,
    detail,
    messageId,
    simulated,
  });
  try {
    switch (node.type) {
      case 'send_text': {
        const text = say(p.text, state);
        const id = await effects.send(node.id, {
          kind: 'text',
          preview: text,
          body: { messageType: 'text', message: text, preview_url: p.preview_url === true },
        });
        return next('out', 'sent a text', id);
      }
      case 'send_media': {
        const url = expand(p.url, state);
        const caption = p.caption !== undefined ? say(p.caption, state) : undefined;
        const body = {
          messageType: p.media_type,
          mediaUrl: url,
          ...(caption ? { message: caption } : {}),
          ...(p.media_type === 'document' && p.filename ? { filename: p.filename } : {}),
        };
        const id = await effects.send(node.id, { kind: 'media', preview: caption ?? `${p.media_type}: ${url}`, body: body as never });
        return next('out', `sent ${p.media_type}`, id);
      }
      case 'send_template': {
        const template = await effects.template(p.template_id);
        if (!template) throw new NodeFailure({ code: 'template_not_approved', message: `Template ${p.template_id} no longer exists.`, node_id: node.id });
        if (template.status !== 'APPROVED')
          throw new NodeFailure({
            code: 'template_not_approved',
            message: `Template ${template.name} is ${template.status}; only APPROVED templates can be sent.`,
            node_id: node.id,
          });
        const values: S['TemplateSendParameters'] = {
          name: template.name,
          language: p.language,
          ...(p.header_variables?.length ? { header: { type: 'text', text: say(p.header_variables[0], state) } as never } : {}),
          ...(p.body_variables?.length ? { body: (p.body_variables as string[]).map((v) => say(v, state)) } : {}),
          ...(p.button_variables?.length
            ? { buttons: (p.button_variables as string[]).map((v, index) => ({ type: 'url' as const, index, text: say(v, state) })) }
            : {}),
        };
        const mediaUrl = p.header_media_url ? expand(p.header_media_url, state) : undefined;
        const preview = `template ${template.name} (${p.language})${values.body ? `: ${values.body.join(', ')}` : ''}`;
        const id = await effects.send(node.id, {
          kind: 'template',
          preview,
          body: { messageType: 'template', template: values, ...(mediaUrl ? { mediaUrl } : {}) },
        });
        return next('out', `sent template ${template.name}`, id);
      }
      case 'send_buttons': {
        const buttons = (p.buttons as { id: string; title: string }[]).map((b) => ({ id: b.id, title: say(b.title, state) }));
        const message: OutboundMessage = { type: 'interactive', interactive: buttonsInteractive({ ...frameOf(p as never, state), buttons }) };
        const id = await effects.send(node.id, { kind: 'buttons', preview: say(p.body, state), message });
        return next('out', 'sent buttons', id);
      }
      case 'send_list': {
        const sections = (p.sections as { title?: string; rows: { id: string; title: string; description?: string }[] }[]).map((s) => ({
          ...(s.title ? { title: say(s.title, state) } : {}),
          rows: s.rows.map((r) => ({ id: r.id, title: say(r.title, state), ...(r.description ? { description: say(r.description, state) } : {}) })),
        }));
        const message: OutboundMessage = {
          type: 'interactive',
          interactive: listInteractive({ ...frameOf(p as never, state), button: say(p.button_text, state), sections }),
        };
        const id = await effects.send(node.id, { kind: 'list', preview: say(p.body, state), message });
        return next('out', 'sent a list', id);
      }
      case 'ask':
        return await ask(node, p, input, state, effects, now, waitState);
      case 'condition': {
        const result = evaluate(p.match ?? 'all', p.rules as ConditionRule[], state);
        return next(result ? 'true' : 'false', `the rules ${result ? 'hold' : 'do not hold'} (${p.match ?? 'all'} of ${p.rules.length})`);
      }
      case 'set_field': {
        const value = expand(p.value, state);
        await effects.setField(p.field, value);
        return next('out', value === '' ? `cleared ${p.field}` : `set ${p.field} to "${value.slice(0, 100)}"`, null, effects.dry);
      }
      case 'add_tag':
        await effects.addTag(p.tag_id);
        state.contact.tags.add(p.tag_id);
        return next('out', `tagged ${p.tag_id}`, null, effects.dry);
      case 'remove_tag':
        await effects.removeTag(p.tag_id);
        state.contact.tags.delete(p.tag_id);
        return next('out', `untagged ${p.tag_id}`, null, effects.dry);
      case 'delay': {
        const ms = Math.min(p.duration * UNIT_MS[p.unit]!, MAX_DELAY_MS);
        if (input.kind === 'timeout') return next('out', `waited ${p.duration} ${p.unit}`);
        return {
          kind: 'wait',
          waitKind: 'delay',
          fireAt: new Date(now.getTime() + ms),
          waitState: {},
          detail: `waiting ${p.duration} ${p.unit}`,
          messageId: null,
        };
      }
      case 'http_request': {
        const headers = Object.fromEntries(Object.entries((p.headers ?? {}) as Record<string, string>).map(([k, v]) => [k, expand(v, state)]));
        const outcome = await effects.http({
          method: p.method,
          url: expandUrl(p.url, state),
          headers,
          body: p.body !== undefined ? expand(p.body, state) : undefined,
          timeoutMs: p.timeout_ms ?? 5000,
        });
        if (outcome.ok && p.save_as) state.vars[p.save_as] = outcome.json;
        if (outcome.ok) return next('success', outcome.detail, null, effects.dry);
        // The run goes on through `error`; the step keeps why.
        return { kind: 'next', port: 'error', detail: outcome.detail, messageId: null, simulated: effects.dry, error: httpError(node.id, outcome) };
      }
      case 'assign_agent': {
        const detail = await effects.assign({ strategy: p.strategy ?? 'round_robin', agentId: p.agent_id, note: p.note });
        return next('out', detail, null, effects.dry);
      }
      case 'start_form':
        return await startForm(node, p, input, state, effects, now, executionId);
      case 'end':
        return next(null, 'the run ended');
      default:
        return { kind: 'fail', error: { code: 'internal', message: `Node type ${node.type} cannot run.`, node_id: node.id } };
    }
  } catch (error) {
    if (error instanceof NodeFailure) return { kind: 'fail', error: { ...error.error, node_id: node.id } };
    throw error;
  }
}

/** Why an http_request took its error port, as the step records it. */
function httpError(nodeId: string, outcome: HttpOutcome): ExecutionError {
  const code = outcome.failure === 'timeout' ? 'timeout' : outcome.failure === 'refused' ? 'unsafe_url' : 'http_error';
  return { code, message: outcome.detail, node_id: nodeId, ...(outcome.status !== null ? { http_status: outcome.status } : {}) };
}

/** URL placeholders are expanded URL-encoded, so a value cannot change the host or add a path. */
function expandUrl(url: string, state: RunState): string {
  return url.replace(/\{\{[^}]*\}\}/g, (m) => encodeURIComponent(expand(m, state)));
}

async function ask(
  node: FlowNode,
  p: Record<string, any>,
  input: NodeInput,
  state: RunState,
  effects: Effects,
  now: Date,
  waitState: Record<string, unknown> | null,
): Promise<NodeResult> {
  if (input.kind === 'enter') {
    let messageId: string | null = null;
    if (p.question) {
      const question = say(p.question, state);
      messageId = await effects.send(node.id, { kind: 'text', preview: question, body: { messageType: 'text', message: question, preview_url: false } });
    }
    const fireAt = new Date(now.getTime() + (p.timeout_minutes ?? 1440) * 60_000);
    return { kind: 'wait', waitKind: 'reply', fireAt, waitState: { retries: 0 }, detail: 'waiting for a reply', messageId };
  }
  if (input.kind === 'timeout')
    return { kind: 'next', port: 'timeout', detail: `no reply within ${p.timeout_minutes ?? 1440} minutes`, messageId: null, simulated: false };
  const reply = input.reply;
  const parsed = acceptAnswer(p.expect ?? 'any', reply, {
    locale: answerLocale(p.locale, state.contact.phone, state.locale),
    contactPhone: state.contact.phone,
    country: state.country ?? null,
    now,
  });
  if (!parsed.ok) {
    const retries = Number(waitState?.retries ?? 0);
    const why = `the answer does not fit ${p.expect} (${parsed.reason})`;
    if (retries >= (p.max_retries ?? 1)) return { kind: 'next', port: 'invalid', detail: `${why}; retries used up`, messageId: null, simulated: false };
    let messageId: string | null = null;
    if (p.retry_text) {
      const text = say(p.retry_text, state);
      messageId = await effects.send(node.id, { kind: 'text', preview: text, body: { messageType: 'text', message: text, preview_url: false } });
    }
    return { kind: 'stay', waitState: { retries: retries + 1 }, detail: `${why}; asked again`, messageId };
  }
  const answer = parsed.value;
  state.reply = { text: reply.text, id: reply.replyId };
  if (p.save_as) {
    state.vars[p.save_as] = answer;
    // Remembered so `{{vars.<name>}}` goes back to the customer formatted for their locale.
    const kind: AnswerKind | null =
      p.expect === 'number' ? { type: 'number', ...(parsed.currency ? { currency: parsed.currency } : {}) } : p.expect === 'date' ? { type: 'date' } : null;
    const kinds = { ...((state.vars[KINDS_KEY] as Record<string, AnswerKind> | undefined) ?? {}) };
    if (kind) kinds[p.save_as] = kind;
    else delete kinds[p.save_as];
    state.vars[KINDS_KEY] = kinds;
  }
  if (p.save_to_field) await effects.setField(p.save_to_field, answer);
  return {
    kind: 'next',
    port: 'reply',
    detail: `reply "${answer.slice(0, 100)}"${p.save_as ? ` saved as ${p.save_as}` : ''}`,
    messageId: null,
    simulated: false,
  };
}

async function startForm(
  node: FlowNode,
  p: Record<string, any>,
  input: NodeInput,
  state: RunState,
  effects: Effects,
  now: Date,
  executionId: string | null,
): Promise<NodeResult> {
  if (input.kind === 'enter') {
    const form = await effects.form(p.flow_id);
    if (!form) throw new NodeFailure({ code: 'reference_missing', message: `No form has flow.flow_id ${p.flow_id} any more.`, node_id: node.id });
    if (form.status !== 'PUBLISHED' && form.status !== 'THROTTLED')
      throw new NodeFailure({ code: 'send_refused', message: `The form ${form.id} is ${form.status}; only a published form can be sent.`, node_id: node.id });
    const message: OutboundMessage = {
      type: 'interactive',
      interactive: {
        type: 'flow',
        ...interactiveBase(p as never, state),
        // The flow token ties the submission to this run.
        action: {
          name: 'flow',
          parameters: {
            flow_message_version: '3',
            flow_id: p.flow_id,
            flow_cta: say(p.cta, state),
            flow_action: 'navigate',
            // The provider requires the screen a `navigate` Flow opens on.
            flow_action_payload: { screen: form.firstScreen },
            ...(executionId ? { flow_token: executionId } : {}),
          },
        },
      },
    };
    const id = await effects.send(node.id, { kind: 'form', preview: say(p.body, state), message });
    const fireAt = new Date(now.getTime() + (p.timeout_minutes ?? 1440) * 60_000);
    return { kind: 'wait', waitKind: 'form', fireAt, waitState: {}, detail: `sent form ${p.flow_id}; waiting for the submission`, messageId: id };
  }
  if (input.kind === 'timeout')
    return { kind: 'next', port: 'timeout', detail: `no submission within ${p.timeout_minutes ?? 1440} minutes`, messageId: null, simulated: false };
  const answers = input.reply.formResponse ?? {};
  if (p.save_as) state.vars[p.save_as] = answers;
  state.reply = { text: null, id: null };
  return { kind: 'next', port: 'submitted', detail: `form submitted (${Object.keys(answers).length} answers)`, messageId: null, simulated: false };
}
