// The sandbox phone answering what the business sent: a tap on a reply button or a list row, or a
// form (a WhatsApp Flow) filled in and submitted. Each becomes the inbound payload the provider
// would post (`interactive.button_reply`, `list_reply`, `nfm_reply` with its `response_json`,
// quoting the message in `context`), through the same signed inbound path as a typed message.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { InboundContent } from '#server/providers/types.js';
import { SandboxProvider } from '#server/providers/sandbox.js';
import type { Database } from '#server/store/schema.js';
import type { FormFieldRow } from '#server/store/schema/forms.js';

export interface Option {
  id: string;
  title: string;
  description?: string;
}

/** What a received interactive message lets the customer do. */
export type Offer =
  | { kind: 'button'; options: Option[] }
  | { kind: 'list'; button: string; options: Option[] }
  | { kind: 'form'; cta: string; formId: string; flowToken: string | null; fields: FormFieldRow[] };

export type SandboxReply =
  | { kind: 'button' | 'list'; messageId: string; optionId: string }
  | { kind: 'form'; messageId: string; answers: Record<string, string[]> };

export interface ReplyTarget {
  /** Our number id (`pn_…`), already checked visible to the caller. */
  phoneNumberId: string;
  workspaceId: string;
  /** The customer's number, E.164. */
  from: string;
  name?: string;
}

type Interactive = {
  type?: string;
  action?: {
    buttons?: { reply?: { id?: string; title?: string } }[];
    button?: string;
    sections?: { rows?: Option[] }[];
    parameters?: { flow_id?: string; flow_cta?: string; flow_token?: string };
  };
};

const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail }] });

/** The offer of a stored outbound message's content, or null when it offers nothing to tap or fill in. */
export async function offerOf(db: Kysely<Database>, workspaceId: string, content: unknown): Promise<Offer | null> {
  const interactive = (content as { interactive?: Interactive } | null)?.interactive;
  const action = interactive?.action;
  if (!interactive || !action) return null;
  if (interactive.type === 'button') {
    const options = (action.buttons ?? []).map((b) => ({ id: String(b.reply?.id ?? ''), title: String(b.reply?.title ?? '') })).filter((o) => o.id);
    return options.length ? { kind: 'button', options } : null;
  }
  if (interactive.type === 'list') {
    const options = (action.sections ?? []).flatMap((s) => s.rows ?? []).filter((r) => typeof r?.id === 'string' && r.id);
    return options.length ? { kind: 'list', button: String(action.button ?? 'Choose'), options } : null;
  }
  if (interactive.type === 'flow' && typeof action.parameters?.flow_id === 'string') {
    const form = await db
      .selectFrom('forms')
      .select(['id', 'fields'])
      .where('workspace_id', '=', workspaceId)
      .where('provider_flow_id', '=', action.parameters.flow_id)
      .executeTakeFirst();
    if (!form) return null;
    return {
      kind: 'form',
      cta: String(action.parameters.flow_cta ?? 'Open'),
      formId: form.id,
      flowToken: action.parameters.flow_token ?? null,
      fields: form.fields,
    };
  }
  return null;
}

/** A form's answers as a Flow's `response_json` carries them: text as strings, choices as ids, check boxes as lists, opt-ins as booleans. */
function formAnswers(fields: FormFieldRow[], given: Record<string, string[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const values = (given[field.name] ?? []).map((v) => v.trim()).filter(Boolean);
    const pointer = `/body/${field.name}`;
    if (field.type === 'opt_in') {
      if (field.required && !values.length) throw invalid(pointer, `${field.label} must be accepted.`);
      out[field.name] = values.length > 0;
      continue;
    }
    if (!values.length) {
      if (field.required) throw invalid(pointer, `${field.label} is required.`);
      continue;
    }
    const ids = new Set((field.options ?? []).map((o) => o.id));
    if ((field.type === 'dropdown' || field.type === 'radio' || field.type === 'checkbox') && values.some((v) => !ids.has(v)))
      throw invalid(pointer, `${field.label}: choose one of its options.`);
    out[field.name] = field.type === 'checkbox' ? values : values[0]!.slice(0, 4096);
  }
  return out;
}

/** Sends the customer's tap or submission as the provider would; answers the stored inbound message id. */
export async function replyFromSandboxPhone(app: FastifyInstance, target: ReplyTarget, reply: SandboxReply): Promise<{ messageId: string }> {
  const sandbox = app.platform.provider('sandbox');
  if (!(sandbox instanceof SandboxProvider)) throw new Error('the sandbox provider is not configured');
  const db = app.platform.store.db;
  const row = await db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .innerJoin('phone_numbers', 'phone_numbers.id', 'messages.phone_number_id')
    .select(['messages.content', 'messages.provider_message_id', 'phone_numbers.provider_phone_number_id'])
    .where('messages.id', '=', reply.messageId)
    .where('messages.workspace_id', '=', target.workspaceId)
    .where('messages.phone_number_id', '=', target.phoneNumberId)
    .where('messages.direction', '=', 'outbound')
    .where('contacts.phone', '=', target.from)
    .executeTakeFirst();
  if (!row?.provider_message_id) throw new HttpProblem(404, 'not-found', 'No such message in this conversation.');
  const offer = await offerOf(db, target.workspaceId, row.content);
  if (!offer || (offer.kind === 'form') !== (reply.kind === 'form') || (reply.kind !== 'form' && offer.kind !== reply.kind))
    throw invalid('/body/kind', 'That message offers nothing of this kind to answer.');
  let message: InboundContent;
  if (reply.kind === 'form' && offer.kind === 'form') {
    // What the form's last screen completes with (its fields and form_id), and the Flow's token.
    const response = { ...formAnswers(offer.fields, reply.answers), form_id: offer.formId, ...(offer.flowToken ? { flow_token: offer.flowToken } : {}) };
    message = { type: 'interactive', interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: JSON.stringify(response) } } };
  } else if (reply.kind !== 'form' && offer.kind !== 'form') {
    const option = offer.options.find((o) => o.id === reply.optionId);
    if (!option) throw invalid('/body/option', 'Choose one of the message’s options.');
    message =
      offer.kind === 'button'
        ? { type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: option.id, title: option.title } } }
        : {
            type: 'interactive',
            interactive: {
              type: 'list_reply',
              list_reply: { id: option.id, title: option.title, ...(option.description ? { description: option.description } : {}) },
            },
          };
  } else throw invalid('/body/kind', 'That message offers nothing of this kind to answer.');
  const { providerMessageId } = await sandbox.simulateInbound({
    phoneNumberId: row.provider_phone_number_id,
    from: target.from,
    name: target.name,
    message,
    replyTo: row.provider_message_id,
  });
  const stored = await db.selectFrom('messages').select('id').where('provider_message_id', '=', providerMessageId).executeTakeFirstOrThrow();
  return { messageId: stored.id };
}
