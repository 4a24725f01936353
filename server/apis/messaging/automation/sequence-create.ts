// Creating drip sequences through the API. The row is the one the timer worker and the keyword
// responder already read (sequences.ts), so an API-made sequence enrols and sends exactly as any
// other. Checks run in layers so each answer names one kind of fault: the body's shape per kind
// (400), then what it references (404, another workspace's included), then whether the sequence
// could ever send (422), then clashes with the account's other sequences (409).
import { sql, type Kysely } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { normalizeKeyword } from '#server/lib/keywords.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import { accountNotFound, findAccount } from '../configuration/accounts.js';
import { buildTemplateMessage } from '../outbound/template-fit.js';
import type { TemplateRow } from '../templates/lookup.js';
import { announceDue } from './due.js';
import { sequenceView, UNIT_MS } from './sequences.js';

type S = components['schemas'];
/** `summary`: the problem's detail when this is the only finding (else `detail`). */
export type Finding = { pointer: string; detail: string; summary?: string };

const DAY_MS = 86_400_000;
const MAX_TOTAL_MS = 365 * DAY_MS;

export function refuse(status: 400 | 404 | 409 | 422, findings: Finding[], summary: string): HttpProblem {
  const name = status === 400 ? 'validation' : status === 404 ? 'not-found' : status === 409 ? 'conflict' : 'unprocessable';
  const errors = findings.map(({ pointer, detail }) => ({ pointer, detail }));
  return new HttpProblem(status, name, findings.length === 1 ? (findings[0]!.summary ?? findings[0]!.detail) : summary, { errors });
}

/**
 * The body with its trigger as the contract's union by `type` (validated before the handler
 * runs, so each kind has exactly its fields): openapi-typescript types a union nested in an
 * object without its discriminator (Omit<…, 'type'>), though the validated body has it.
 */
type Body = Omit<S['SequenceCreate'], 'trigger'> & { trigger: S['SequenceTriggerCreate'] };

/** What the schema cannot say: a blank keyword or text, delays over a year in all. */
function shapeFindings(body: Body): Finding[] {
  const out: Finding[] = [];
  const t = body.trigger;
  if (t.type === 'keyword' && !t.keyword.trim()) out.push({ pointer: '/body/trigger/keyword', detail: "trigger 'keyword' needs keyword" });
  let total = 0;
  body.steps.forEach((step, i) => {
    total += step.delay * UNIT_MS[step.delay_unit];
    if (step.message_type === 'text' && !step.text.trim()) out.push({ pointer: `/body/steps/${i}/text`, detail: `step ${i + 1}: a 'text' step needs text` });
  });
  if (total > MAX_TOTAL_MS) out.push({ pointer: '/body/steps', detail: 'the delays add up to more than 365 days' });
  return out;
}

/** Why a template cannot be a step, or null: it must be the account's, in the step's language, approved when the sequence is active, and sendable without values. */
export function templateFault(template: TemplateRow, step: { language?: string | null }, accountId: string, active: boolean, now: Date): Finding | null {
  const id = template.id;
  if (template.business_account_id !== accountId)
    return { pointer: '/template_id', detail: `Template ${id} belongs to another business account than the sequence's.` };
  if (step.language != null && step.language !== template.language)
    return { pointer: '/language', detail: `Template ${id} is in ${template.language}, not ${step.language}.` };
  if (active && template.status !== 'APPROVED')
    return { pointer: '/template_id', detail: `Template ${id} is ${template.status}; an active sequence sends approved templates only.` };
  try {
    // What the worker will send: the template by name and language, with no values.
    buildTemplateMessage(
      template,
      { name: template.name, language: template.language },
      { name: null, phone: '+10000000000', email: null, custom_fields: null },
      {},
      now,
    );
  } catch (error) {
    if (!(error instanceof HttpProblem)) throw error;
    return { pointer: '/template_id', detail: `Template ${id} needs values a sequence cannot give (${error.problem.detail ?? error.message}).` };
  }
  return null;
}

async function referenceFindings(
  db: Kysely<Database>,
  workspaceId: string,
  accountId: string,
  body: Body,
): Promise<{ missing: Finding[]; templates: Map<string, TemplateRow> }> {
  const missing: Finding[] = [];
  if (body.phone_number_id !== undefined) {
    const number = await db
      .selectFrom('phone_numbers')
      .select('id')
      .where('id', '=', body.phone_number_id)
      .where('workspace_id', '=', workspaceId)
      .where('business_account_id', '=', accountId)
      .executeTakeFirst();
    if (!number)
      missing.push({
        pointer: '/body/phone_number_id',
        detail: 'unknown phone number of this business account',
        summary: `No phone number ${body.phone_number_id} in business account ${accountId} of this workspace.`,
      });
  }
  const tagId = body.trigger.type === 'tag_added' ? body.trigger.tag_id : undefined;
  if (tagId !== undefined) {
    const tag = await db.selectFrom('tags').select('id').where('id', '=', tagId).where('workspace_id', '=', workspaceId).executeTakeFirst();
    if (!tag) missing.push({ pointer: '/body/trigger/tag_id', detail: 'unknown tag', summary: `No tag ${tagId} in this workspace.` });
  }
  const ids = [...new Set(body.steps.flatMap((s) => (s.message_type === 'template' ? [s.template_id] : [])))];
  const rows = ids.length ? await db.selectFrom('message_templates').selectAll().where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute() : [];
  const templates = new Map(rows.map((r) => [r.id, r]));
  body.steps.forEach((s, i) => {
    if (s.message_type === 'template' && !templates.has(s.template_id))
      missing.push({
        pointer: `/body/steps/${i}/template_id`,
        detail: `step ${i + 1}: unknown template ${s.template_id}`,
        summary: `No template ${s.template_id} in this workspace.`,
      });
  });
  return { missing, templates };
}

/** 409 when another active sequence of the account has the keyword: the keyword responder enrols in the oldest match only, so this one would never fire. */
export async function refuseKeywordClash(
  db: Kysely<Database>,
  workspaceId: string,
  accountId: string,
  keyword: string,
  pointer: string,
  exceptId?: string,
): Promise<void> {
  let query = db
    .selectFrom('automation_sequences')
    .select(['id', sql<string>`trigger->>'keyword'`.as('keyword')])
    .where('workspace_id', '=', workspaceId)
    .where('business_account_id', '=', accountId)
    .where('status', '=', 'active')
    .where(sql<boolean>`trigger->>'type' = 'keyword'`);
  if (exceptId) query = query.where('id', '!=', exceptId);
  // Compared as the keyword responder compares them (the shared normaliser, lib/keywords.ts).
  const wanted = normalizeKeyword(keyword);
  const clash = (await query.orderBy('created_at').execute()).find((s) => normalizeKeyword(s.keyword ?? '') === wanted);
  if (clash)
    throw refuse(409, [{ pointer, detail: `The active sequence ${clash.id} of this business account already has the keyword '${keyword.trim()}'.` }], '');
}

export const createSequence: Handler<operations['createSequence']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body as unknown as Body;
  const status = body.status ?? 'active';
  const stopOnReply = body.stop_on_reply ?? true;

  const shape = shapeFindings(body);
  if (shape.length) throw refuse(400, shape, 'The sequence is not valid.');

  const account = await findAccount(db, workspaceId, body.waba_id).catch((error: unknown) => {
    // Same body as any unknown account, with the field named.
    if (error instanceof HttpProblem && error.status === 404)
      throw new HttpProblem(404, 'not-found', accountNotFound(body.waba_id).message, {
        errors: [{ pointer: '/body/waba_id', detail: 'unknown business account' }],
      });
    throw error;
  });
  const { missing, templates } = await referenceFindings(db, workspaceId, account.id, body);
  if (missing.length) throw refuse(404, missing, 'The sequence references resources this workspace does not have.');

  const now = platform.now();
  const faults: Finding[] = [];
  let elapsed = 0;
  body.steps.forEach((step, i) => {
    elapsed += step.delay * UNIT_MS[step.delay_unit];
    if (step.message_type === 'template') {
      const fault = templateFault(templates.get(step.template_id)!, step, account.id, status === 'active', now);
      if (fault) faults.push({ pointer: `/body/steps/${i}${fault.pointer}`, detail: fault.detail });
    } else if (stopOnReply && elapsed >= DAY_MS) {
      // Every reply ends the enrolment, so no reply can have reopened the 24-hour window by then.
      faults.push({
        pointer: `/body/steps/${i}/message_type`,
        detail: `Step ${i + 1} is a text 24 hours or more after enrolment; with stop_on_reply the customer-service window is closed by then: use a template.`,
      });
    }
  });
  if (faults.length) throw refuse(422, faults, 'The sequence could not send some of its steps.');

  const keyword = body.trigger.type === 'keyword' ? body.trigger.keyword.trim() : null;
  if (keyword !== null && status === 'active') await refuseKeywordClash(db, workspaceId, account.id, keyword, '/body/trigger/keyword');

  const steps: S['SequenceStep'][] = body.steps.map((s, i) => ({
    position: i + 1,
    delay: s.delay,
    delay_unit: s.delay_unit,
    message_type: s.message_type,
    text: s.message_type === 'text' ? s.text : null,
    template_id: s.message_type === 'template' ? s.template_id : null,
    language: s.message_type === 'template' ? (s.language ?? templates.get(s.template_id)!.language) : null,
  }));
  const trigger: S['SequenceTrigger'] = { type: body.trigger.type, tag_id: body.trigger.type === 'tag_added' ? body.trigger.tag_id : null, keyword };
  const row = await db
    .insertInto('automation_sequences')
    .values({
      id: newId('seq'),
      workspace_id: workspaceId,
      business_account_id: account.id,
      phone_number_id: body.phone_number_id ?? null,
      name: body.name,
      status,
      trigger: JSON.stringify(trigger),
      steps: JSON.stringify(steps),
      stop_on_reply: stopOnReply,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  // An enrolling trigger makes the timer workers watch contacts and tags (sequences.ts).
  if (status === 'active' && trigger.type !== 'keyword') await announceDue(platform);
  reply.code(201);
  return sequenceView(row, 0, 0);
};
