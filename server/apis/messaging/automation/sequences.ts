// Drip sequences: messages sent on delays after a contact's enrolment, on durable timers of the
// same kind as flows' waits (an enrolment's `fire_at`, leased with FOR UPDATE SKIP LOCKED, so a
// step is sent once across instances and after a restart). Enrolment: `tag_added` and
// `contact_created` are picked up by the timer worker (contacts tagged or created after the
// sequence), `keyword` by an inbound responder (order 25). A reply ends the enrolment when the
// sequence says `stop_on_reply`.
import type { FastifyInstance } from 'fastify';
import { sql, type SqlBool } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import { normalizeKeyword } from '#server/lib/keywords.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { yieldToRequests } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import type { AutomationSequencesTable } from '#server/store/schema/automation.js';
import type { Selectable } from 'kysely';
import { findAccount } from '../configuration/accounts.js';
import { deliver } from '../outbound/deliver.js';
import { announceDue } from './due.js';
import { sendError } from './effects.js';
import { registerInboundResponder, type InboundMessage } from './responders.js';
import { LEASE_MS } from './runner.js';

type S = components['schemas'];
type SequenceRow = Selectable<AutomationSequencesTable>;
export const UNIT_MS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;

/** A sequence as the contract shows it, with its enrolment counters. */
export function sequenceView(row: SequenceRow, enrolled: number, completed: number): S['Sequence'] {
  return {
    id: row.id,
    name: row.name,
    waba_id: row.business_account_id,
    phone_number_id: row.phone_number_id,
    status: row.status,
    trigger: row.trigger as S['SequenceTrigger'],
    steps: row.steps as S['SequenceStep'][],
    stop_on_reply: row.stop_on_reply,
    enrolled_count: enrolled,
    completed_count: completed,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export const listSequences: Handler<operations['listSequences']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { waba_id: wabaId, status, limit = 20, cursor } = request.query;
  const account = await findAccount(db, workspaceId, wabaId);
  const scope = { workspaceId, operation: 'listSequences' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = db.selectFrom('automation_sequences').selectAll().where('workspace_id', '=', workspaceId).where('business_account_id', '=', account.id);
  if (status) query = query.where('status', '=', status);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const ids = rows.slice(0, limit).map((r) => r.id);
  const counts = ids.length
    ? await db
        .selectFrom('automation_sequence_enrolments')
        .select(['sequence_id', 'status', sql<string>`count(*)`.as('n')])
        .where('sequence_id', 'in', ids)
        .groupBy(['sequence_id', 'status'])
        .execute()
    : [];
  const count = (id: string, s: string) => Number(counts.find((c) => c.sequence_id === id && c.status === s)?.n ?? 0);
  return keysetPage(platform.secrets, scope, rows, limit, (row) => sequenceView(row, count(row.id, 'active'), count(row.id, 'completed')));
};

const stepsOf = (row: SequenceRow) => row.steps as S['SequenceStep'][];
const delayMs = (step: S['SequenceStep']) => step.delay * UNIT_MS[step.delay_unit];

/** The number a sequence sends from for a contact: its own, else the contact's latest chat on the account, else the account's first. */
async function senderFor(platform: Platform, seq: SequenceRow, contactId: string): Promise<string | null> {
  if (seq.phone_number_id) return seq.phone_number_id;
  const db = platform.store.db;
  const chat = await db
    .selectFrom('chats')
    .innerJoin('phone_numbers', 'phone_numbers.id', 'chats.phone_number_id')
    .select('chats.phone_number_id')
    .where('chats.contact_id', '=', contactId)
    .where('phone_numbers.business_account_id', '=', seq.business_account_id)
    .orderBy('chats.last_message_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (chat) return chat.phone_number_id;
  return (
    (await db.selectFrom('phone_numbers').select('id').where('business_account_id', '=', seq.business_account_id).orderBy('id').limit(1).executeTakeFirst())
      ?.id ?? null
  );
}

/** Enrols a contact (once while an enrolment is active); false when already enrolled or nothing to send. */
export async function enrol(platform: Platform, seq: SequenceRow, contactId: string, phoneNumberId?: string, announce = true): Promise<boolean> {
  const steps = stepsOf(seq);
  const pn = phoneNumberId ?? (await senderFor(platform, seq, contactId));
  if (!steps.length || !pn) return false;
  const now = platform.now();
  const fireAt = new Date(now.getTime() + delayMs(steps[0]!));
  const row = await platform.store.db
    .insertInto('automation_sequence_enrolments')
    .values({
      id: newId('enr'),
      sequence_id: seq.id,
      workspace_id: seq.workspace_id,
      contact_id: contactId,
      phone_number_id: pn,
      status: 'active',
      next_step: 1,
      fire_at: fireAt,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['sequence_id', 'contact_id']).where(sql<SqlBool>`status = 'active'`).doNothing())
    .returning('id')
    .executeTakeFirst();
  // The timer workers sleep until the earliest step they know of (the worker's own enrolments need not).
  if (row && announce) await announceDue(platform, fireAt);
  return Boolean(row);
}

/**
 * Enrols contacts tagged (tag_added) or created (contact_created) since the sequence was made and
 * never enrolled in it. Answers whether an active sequence enrols so: contacts and tags announce
 * nothing, so the timer worker looks again soon while one does (and only then).
 */
export async function enrolNewContacts(platform: Platform): Promise<boolean> {
  const db = platform.store.db;
  const sequences = await db.selectFrom('automation_sequences').selectAll().where('status', '=', 'active').limit(200).execute();
  let watching = false;
  for (const seq of sequences) {
    const trigger = seq.trigger as S['SequenceTrigger'];
    if (trigger.type === 'tag_added' || trigger.type === 'contact_created') watching = true;
    let candidates: { id: string }[] = [];
    const notEnrolled = (col: 'contacts.id' | 'contact_tags.contact_id') =>
      sql<boolean>`not exists (select 1 from automation_sequence_enrolments e where e.sequence_id = ${seq.id} and e.contact_id = ${sql.ref(col)})`;
    // An opted-out contact is not enrolled by a tag or its creation (a keyword it sends still enrols it).
    const optedIn = (col: 'contacts.id' | 'contact_tags.contact_id') =>
      sql<boolean>`not exists (select 1 from contacts o where o.id = ${sql.ref(col)} and o.opted_out_at is not null)`;
    if (trigger.type === 'tag_added' && trigger.tag_id) {
      candidates = await db
        .selectFrom('contact_tags')
        .select('contact_tags.contact_id as id')
        .where('contact_tags.tag_id', '=', trigger.tag_id)
        .where('contact_tags.created_at', '>=', seq.created_at)
        .where(notEnrolled('contact_tags.contact_id'))
        .where(optedIn('contact_tags.contact_id'))
        .limit(500)
        .execute();
    } else if (trigger.type === 'contact_created') {
      candidates = await db
        .selectFrom('contacts')
        .select('contacts.id')
        .where('workspace_id', '=', seq.workspace_id)
        .where('created_at', '>=', seq.created_at)
        .where(notEnrolled('contacts.id'))
        .where(optedIn('contacts.id'))
        .limit(500)
        .execute();
    }
    for (const c of candidates) await enrol(platform, seq, c.id, undefined, false);
  }
  return watching;
}

/** Sends due steps (leased with SKIP LOCKED); answers when the next one is due. */
export async function sendDueSteps(platform: Platform, running: () => boolean): Promise<Date | null> {
  const db = platform.store.db;
  for (let round = 0; round < 10 && running(); round++) {
    const now = platform.now();
    const due = await db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('automation_sequence_enrolments')
        .select('id')
        .where(sql<SqlBool>`status = 'active'`) // a literal: a generic plan can use automation_enrolments_due
        .where('fire_at', '<=', now)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .orderBy('fire_at')
        .limit(20)
        .forUpdate()
        .skipLocked()
        .execute();
      if (rows.length) {
        await trx
          .updateTable('automation_sequence_enrolments')
          .set({ lease_until: new Date(now.getTime() + LEASE_MS), leased_by: platform.instanceId })
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .execute();
      }
      return rows.map((r) => r.id);
    });
    for (const id of due) await sendStep(platform, id);
    if (due.length < 20) break;
    await yieldToRequests();
  }
  // A leased step is due again when its lease ends (its instance may have died sending it).
  const next = await db
    .selectFrom('automation_sequence_enrolments')
    .select(sql<Date | null>`min(greatest(fire_at, lease_until))`.as('next'))
    .where(sql<SqlBool>`status = 'active'`)
    .executeTakeFirst();
  return next?.next ? new Date(next.next) : null;
}

async function sendStep(platform: Platform, enrolmentId: string): Promise<void> {
  const db = platform.store.db;
  const e = await db
    .selectFrom('automation_sequence_enrolments')
    .selectAll()
    .where('id', '=', enrolmentId)
    .where('leased_by', '=', platform.instanceId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  if (!e) return;
  const seq = await db.selectFrom('automation_sequences').selectAll().where('id', '=', e.sequence_id).executeTakeFirst();
  const contact = await db.selectFrom('contacts').select('phone').where('id', '=', e.contact_id).executeTakeFirst();
  const steps = seq ? stepsOf(seq) : [];
  const step = steps[e.next_step - 1];
  const settle = (values: Record<string, unknown>) =>
    db
      .updateTable('automation_sequence_enrolments')
      .set({ lease_until: null, leased_by: null, updated_at: platform.now(), ...values })
      .where('id', '=', e.id)
      .where('leased_by', '=', platform.instanceId)
      .execute();
  // An inactive sequence pauses its enrolments: they stay due and go on once it is active again.
  if (seq?.status === 'inactive') return void (await settle({}));
  if (!seq || !contact || !step) return void (await settle({ status: 'completed', fire_at: null }));
  try {
    if (step.message_type === 'template') {
      const t = await db
        .selectFrom('message_templates')
        .select('name')
        .where('id', '=', step.template_id!)
        .where('workspace_id', '=', e.workspace_id)
        .executeTakeFirst();
      if (!t)
        throw Object.assign(new Error('gone'), {
          sequenceError: { code: 'template_not_approved', message: `Template ${step.template_id} no longer exists.`, node_id: null },
        });
      await deliver(platform, e.workspace_id, {
        contact_no: contact.phone,
        chatapp_phone_number: e.phone_number_id,
        messageType: 'template',
        template: { name: t.name, language: step.language! },
      });
    } else {
      await deliver(platform, e.workspace_id, {
        contact_no: contact.phone,
        chatapp_phone_number: e.phone_number_id,
        messageType: 'text',
        message: step.text ?? '',
        preview_url: false,
      });
    }
  } catch (error) {
    const known = (error as { sequenceError?: unknown }).sequenceError ?? sendError(error, null);
    return void (await settle({
      status: 'failed',
      fire_at: null,
      error: JSON.stringify(known ?? { code: 'internal', message: 'The step could not be sent.', node_id: null }),
    }));
  }
  const following = steps[e.next_step];
  await settle(
    following
      ? { next_step: e.next_step + 1, fire_at: new Date(platform.now().getTime() + delayMs(following)) }
      : { status: 'completed', next_step: e.next_step + 1, fire_at: null },
  );
}

/**
 * A reply ends the contact's enrolments in sequences that stop on reply. Only enrolments made
 * before the message count: a message dispatched late (a busy or restarted instance) that the
 * contact sent before being enrolled is no reply to the sequence.
 */
export async function stopOnReply(platform: Platform, message: InboundMessage): Promise<void> {
  await platform.store.db
    .updateTable('automation_sequence_enrolments')
    .set({ status: 'stopped', fire_at: null, updated_at: platform.now() })
    .where('contact_id', '=', message.contactId)
    .where('status', '=', 'active')
    // When this server stored the message (its due record); the provider's own time has whole seconds.
    .where('created_at', '<', (eb) => eb.selectFrom('automation_inbound_claims').select('received_at').where('message_id', '=', message.messageId))
    .where('sequence_id', 'in', (eb) =>
      eb.selectFrom('automation_sequences').select('id').where('workspace_id', '=', message.workspaceId).where('stop_on_reply', '=', true),
    )
    .execute();
}

/** Responder 25: an inbound text equal to an active sequence's keyword enrols the contact. */
export function registerSequenceResponder(app: FastifyInstance): () => void {
  return registerInboundResponder(app, {
    name: 'automation.sequence_keyword',
    order: 25,
    async respond(p, message) {
      if (message.type !== 'text' || !message.text) return false;
      const text = normalizeKeyword(message.text);
      if (!message.businessAccountId) return false;
      const sequences = await p.store.db
        .selectFrom('automation_sequences')
        .selectAll()
        .where('workspace_id', '=', message.workspaceId)
        .where('business_account_id', '=', message.businessAccountId)
        .where('status', '=', 'active')
        .where(sql<boolean>`trigger->>'type' = 'keyword'`)
        .orderBy('created_at')
        .execute();
      // Both sides through the shared normaliser (lib/keywords.ts): width, invisible characters, spaces, case, accents.
      const seq = text ? sequences.find((s) => normalizeKeyword((s.trigger as S['SequenceTrigger']).keyword ?? '') === text) : undefined;
      return seq ? enrol(p, seq, message.contactId, message.phoneNumberId) : false;
    },
  });
}
