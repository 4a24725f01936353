// Opt-out: a contact that opted out (it wrote an opt-out keyword, or the business set it through
// the API or an import) gets no campaign and no message, except what WhatsApp's policy still
// allows: authentication templates, and free-form replies while the customer's latest message is
// the opt-out itself or came after it (a service reply; the 24-hour rule still applies). An
// opt-in keyword clears the state. Keywords are per workspace, matched against the whole text of
// an inbound text message, ignoring case, accents and surrounding punctuation. Opting out ends
// the contact's sequence enrolments.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { StoredInbound } from '#server/events/inbound-steps.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';

type Settings = components['schemas']['OptOutSettings'];

/** STOP and its common translations (es, pt, fr, de, nl, it). */
export const DEFAULT_OPT_OUT = ['STOP', 'UNSUBSCRIBE', 'PARAR', 'BAJA', 'ARRET', 'STOPP', 'ABMELDEN', 'SAIR'];
/** START and its common translations. */
export const DEFAULT_OPT_IN = ['START', 'SUBSCRIBE', 'ALTA', 'INICIAR', 'COMMENCER', 'ANMELDEN'];

/** A keyword or a message as compared: accents and case folded, surrounding punctuation and spaces gone. */
export function normalizeKeyword(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, '')
    .replace(/\s+/g, ' ');
}

/** The longest text that can be a keyword (keywords are at most 40 characters). */
const MAX_KEYWORD = 40;

async function loadSettings(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('opt_out_settings').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
}

function view(row: Awaited<ReturnType<typeof loadSettings>>): Settings {
  return {
    opt_out_keywords: row?.opt_out_keywords ?? DEFAULT_OPT_OUT,
    opt_in_keywords: row?.opt_in_keywords ?? DEFAULT_OPT_IN,
    updated_at: row ? new Date(row.updated_at).toISOString() : null,
  };
}

export const getOptOutSettings: Handler<operations['getOptOutSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  return view(await loadSettings(request.server.platform.store.db, workspaceId));
};

/** Each list once per normalised keyword, in the order given. */
function dedupe(list: string[]): string[] {
  const seen = new Set<string>();
  return list.filter((k) => {
    const n = normalizeKeyword(k);
    if (seen.has(n)) return false;
    seen.add(n);
    return true;
  });
}

export const updateOptOutSettings: Handler<operations['updateOptOutSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const current = view(await loadSettings(store.db, workspaceId));
  const body = request.body;
  const out = dedupe(body.opt_out_keywords ?? current.opt_out_keywords);
  const inn = dedupe(body.opt_in_keywords ?? current.opt_in_keywords);
  const blank = [...out.map((k, i) => ['opt_out_keywords', k, i] as const), ...inn.map((k, i) => ['opt_in_keywords', k, i] as const)].find(
    ([, k]) => normalizeKeyword(k) === '',
  );
  if (blank)
    throw new HttpProblem(422, 'unprocessable', `${JSON.stringify(blank[1])} has no letters or digits.`, {
      errors: [{ pointer: `/body/${blank[0]}/${blank[2]}`, detail: 'is only punctuation or spaces' }],
    });
  const outSet = new Set(out.map(normalizeKeyword));
  const given = body.opt_in_keywords ?? current.opt_in_keywords;
  const both = given.findIndex((k) => outSet.has(normalizeKeyword(k)));
  if (both >= 0)
    throw new HttpProblem(422, 'unprocessable', `${normalizeKeyword(given[both]!)} is both an opt-out and an opt-in keyword.`, {
      errors: [{ pointer: `/body/opt_in_keywords/${both}`, detail: 'is also an opt-out keyword' }],
    });
  const at = now();
  const values = { opt_out_keywords: JSON.stringify(out), opt_in_keywords: JSON.stringify(inn), updated_at: at };
  const row = await store.db
    .insertInto('opt_out_settings')
    .values({ workspace_id: workspaceId, ...values })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(row);
};

/**
 * Ends a contact's active sequence enrolments when it opts out (by keyword, the API or an
 * import): no later step is sent, and opting back in does not resume them.
 */
export async function stopEnrolments(trx: Transaction<Database>, contactIds: string[], at: Date): Promise<void> {
  if (!contactIds.length) return;
  await trx
    .updateTable('automation_sequence_enrolments')
    .set({ status: 'stopped', fire_at: null, updated_at: at })
    .where('contact_id', 'in', contactIds)
    .where('status', '=', 'active')
    .execute();
}

/**
 * The inbound step (in the transaction that stores the message): an opt-out keyword opts the
 * contact out (source `keyword`, at the message's time), an opt-in keyword opts it back in.
 */
export async function applyOptOutKeywords(trx: Transaction<Database>, platform: Platform, message: StoredInbound): Promise<void> {
  if (message.type !== 'text' || message.text === undefined || message.text.length > MAX_KEYWORD * 2) return;
  const text = normalizeKeyword(message.text);
  if (!text || text.length > MAX_KEYWORD) return;
  const settings = view(await loadSettings(trx, message.workspaceId));
  const at = platform.now();
  if (settings.opt_out_keywords.some((k) => normalizeKeyword(k) === text)) {
    await trx
      .updateTable('contacts')
      // The keyword message's time (just stored as the last inbound), so a reply to it counts as one.
      .set({ opted_out_at: sql`coalesce(last_inbound_at, ${at})`, opt_out_source: 'keyword', updated_at: at })
      .where('id', '=', message.contactId)
      .where('opted_out_at', 'is', null)
      .execute();
    await stopEnrolments(trx, [message.contactId], at);
  } else if (settings.opt_in_keywords.some((k) => normalizeKeyword(k) === text)) {
    await trx
      .updateTable('contacts')
      .set({ opted_out_at: null, opt_out_source: null, updated_at: at })
      .where('id', '=', message.contactId)
      .where('opted_out_at', 'is not', null)
      .execute();
  }
}

interface Recipient {
  phone: string;
  opted_out_at: Date | null;
  opt_out_source: string | null;
  last_inbound_at: Date | null;
}

/**
 * The send rule: 422 `opted-out` for a contact that opted out, unless the message is an
 * authentication template, or a free-form reply while the customer's latest message is the
 * opt-out itself (a confirmation) or came after it (a service reply).
 */
export async function requireNotOptedOut(db: Kysely<Database>, contact: Recipient | undefined, templateId: string | null | undefined): Promise<void> {
  if (!contact?.opted_out_at) return;
  const optedOut = new Date(contact.opted_out_at);
  if (templateId) {
    const template = await db.selectFrom('message_templates').select('category').where('id', '=', templateId).executeTakeFirst();
    if (template?.category === 'AUTHENTICATION') return;
  } else if (contact.last_inbound_at && new Date(contact.last_inbound_at).getTime() >= optedOut.getTime()) return;
  throw new HttpProblem(
    422,
    'opted-out',
    `Contact ${contact.phone} opted out (${contact.opt_out_source ?? 'api'}) on ${optedOut.toISOString()}; only authentication templates, and replies once the customer writes again, are sent.`,
    { errors: [{ pointer: '/body/contact_no', detail: 'opted out of messages' }] },
  );
}
