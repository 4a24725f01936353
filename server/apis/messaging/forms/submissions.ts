// Form submissions: an inbound `nfm_reply` (stored by the provider webhook as a `form_response`)
// is matched to its form by the `form_id` our Flow JSON puts in every completion payload (or a
// `flow_token` naming the form or its Flow id), then stored once (keyed by message id) on the
// form and on the contact: `name`/`email` attributes and custom fields take the answers whose
// target exists and whose value fits; every answer stays in the submission.
import type { FastifyBaseLogger } from 'fastify';
import type { Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { toE164 } from '#server/lib/phone.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { FormFieldRow } from '#server/store/schema/forms.js';
import type { InboundMessage, InboundResponder } from '../automation/responders.js';
import { loadFieldDefinitions, mergeCustomValues } from '../contacts/custom-values.js';
import { CONTACT_ATTRIBUTES } from './fields.js';

type Answer = string | number | boolean | string[];

/** A field's answer in its stored form; undefined when absent or empty. */
export function answerOf(field: FormFieldRow, raw: unknown): Answer | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  switch (field.type) {
    case 'checkbox':
      return Array.isArray(raw) ? raw.map(String) : [String(raw)];
    case 'opt_in':
      return raw === true || raw === 'true';
    case 'number': {
      const n = Number(raw);
      return Number.isFinite(n) ? n : String(raw);
    }
    case 'phone':
      return toE164(String(raw)) ?? String(raw);
    default:
      return String(raw).slice(0, 4096);
  }
}

async function formOf(trx: Transaction<Database>, workspaceId: string, response: Record<string, unknown>) {
  const refs = [response.form_id, response.flow_token].filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200);
  if (!refs.length) return undefined;
  return trx
    .selectFrom('forms')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('id', 'in', refs), eb('provider_flow_id', 'in', refs)]))
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** Stores the submission of message `messageId`; answers the form id, or undefined when it is no (known) form response or was stored before. */
export async function storeSubmission(
  platform: Platform,
  message: Pick<InboundMessage, 'workspaceId' | 'messageId' | 'contactId'>,
): Promise<string | undefined> {
  return platform.store.db.transaction().execute(async (trx) => {
    const stored = await trx
      .selectFrom('messages')
      .select(['type', 'content', 'created_at'])
      .where('id', '=', message.messageId)
      .where('workspace_id', '=', message.workspaceId)
      .executeTakeFirst();
    const content = stored?.content as { form_response?: { response?: Record<string, unknown> } } | undefined;
    const response = content?.form_response?.response;
    if (stored?.type !== 'form_response' || !response) return undefined;
    const form = await formOf(trx, message.workspaceId, response);
    if (!form) return undefined;
    const answers: Record<string, Answer> = {};
    for (const field of form.fields) {
      const value = answerOf(field, Object.hasOwn(response, field.name) ? response[field.name] : undefined);
      if (value !== undefined) answers[field.name] = value;
    }
    const inserted = await trx
      .insertInto('form_submissions')
      .values({
        id: newId('fsub'),
        workspace_id: message.workspaceId,
        form_id: form.id,
        contact_id: message.contactId,
        message_id: message.messageId,
        answers: JSON.stringify(answers),
        created_at: stored.created_at,
      })
      .onConflict((oc) => oc.column('message_id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return undefined;
    await trx
      .updateTable('forms')
      .set((eb) => ({ submission_count: eb('submission_count', '+', 1) }))
      .where('id', '=', form.id)
      .execute();
    await applyToContact(trx, message.workspaceId, message.contactId, form.fields, answers, platform.now());
    return form.id;
  });
}

async function applyToContact(
  trx: Transaction<Database>,
  workspaceId: string,
  contactId: string,
  fields: FormFieldRow[],
  answers: Record<string, Answer>,
  now: Date,
) {
  const contact = await trx
    .selectFrom('contacts')
    .select(['custom_fields'])
    .where('id', '=', contactId)
    .where('workspace_id', '=', workspaceId)
    .forUpdate()
    .executeTakeFirst();
  if (!contact) return;
  const definitions = await loadFieldDefinitions(trx, workspaceId);
  const attributes: { name?: string; email?: string } = {};
  let custom = { ...(contact.custom_fields ?? {}) };
  for (const field of fields) {
    const value = answers[field.name];
    if (value === undefined) continue;
    const key = field.custom_field ?? field.name;
    if (CONTACT_ATTRIBUTES.has(key)) {
      if (typeof value === 'string' && value.trim()) attributes[key as 'name' | 'email'] = value.trim().slice(0, key === 'email' ? 254 : 200);
      continue;
    }
    if (!definitions.has(key)) continue;
    const stored = Array.isArray(value) ? value.join(', ') : typeof value === 'boolean' ? (value ? 'yes' : 'no') : value;
    try {
      custom = mergeCustomValues(custom, { [key]: stored }, definitions);
    } catch {
      // The answer does not fit the custom field's type: it stays in the submission only.
    }
  }
  await trx
    .updateTable('contacts')
    .set({ ...attributes, custom_fields: JSON.stringify(custom), updated_at: now })
    .where('id', '=', contactId)
    .execute();
}

/** Order 5: before any flow waiting for this contact (10), which then finds the answers stored. */
export function submissionResponder(log: FastifyBaseLogger): InboundResponder {
  return {
    name: 'forms.submission',
    order: 5,
    async respond(platform, message) {
      if (message.type !== 'form_response') return false;
      const formId = await storeSubmission(platform, message);
      if (formId) log.info({ formId, messageId: message.messageId }, 'form submission stored');
      // Storing is not answering: a flow waiting for the submission still gets the message.
      return false;
    },
  };
}
