// Opt-out: a contact that opted out (it wrote an opt-out keyword, or the business set it through
// the API or an import) gets no campaign and no message, except what WhatsApp's policy and the
// law still allow: authentication templates, the automatic confirmation of the opt-out (when the
// workspace turned it on), and free-form replies once the customer writes again after opting out
// (a service reply inside its own 24-hour window). Anything else answers 422 `opted-out`, also a
// free-form text sent right after the STOP. An opt-in keyword clears the state.
//
// Keywords are per workspace (until set: the defaults below, the workspace locale's language
// first), matched against the whole text of an inbound text message with the normaliser every
// keyword matcher shares (lib/keywords.ts). The keyword is acted on in the transaction that
// stores the message (an inbound step), and the message is then answered before any flow, bot or
// sequence (responder order 0, optOutResponder): a new contact whose first message is STOPP gets
// no welcome flow. Opting out ends the contact's sequence enrolments.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { StoredInbound } from '#server/events/inbound-steps.js';
import type { Handler } from '#server/lib/handler-types.js';
import { normalizeKeyword } from '#server/lib/keywords.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { InboundMessage, InboundResponder } from '../automation/responders.js';
import { workspaceLocale } from '../configuration/messaging-settings.js';

type Settings = components['schemas']['OptOutSettings'];
type Db = Kysely<Database> | Transaction<Database>;

export { normalizeKeyword };

interface Language {
  optOut: string[];
  optIn: string[];
  /** The confirmations; `{keyword}` is the keyword that undoes it. */
  optedOut: string;
  optedIn: string;
}

/**
 * The default keywords and confirmation texts per language: STOP and UNSUBSCRIBE everywhere
 * (Meta's and the carriers' common words), then what customers write in each language.
 */
export const LANGUAGES: Record<string, Language> = {
  en: {
    optOut: ['STOP', 'UNSUBSCRIBE', 'STOP ALL', 'STOPALL', 'CANCEL', 'END', 'QUIT', 'OPT OUT'],
    optIn: ['START', 'SUBSCRIBE', 'UNSTOP'],
    optedOut: 'You have been unsubscribed and will get no more messages from us. Reply {keyword} to subscribe again.',
    optedIn: 'You are subscribed again. Reply {keyword} to unsubscribe.',
  },
  de: {
    optOut: ['STOPP', 'ABMELDEN', 'ABBESTELLEN'],
    optIn: ['ANMELDEN'],
    optedOut: 'Sie wurden abgemeldet und erhalten keine Nachrichten mehr von uns. Antworten Sie {keyword}, um sich wieder anzumelden.',
    optedIn: 'Sie sind wieder angemeldet. Antworten Sie {keyword}, um sich abzumelden.',
  },
  pt: {
    optOut: ['PARAR', 'SAIR', 'CANCELAR', 'DESCADASTRAR'],
    optIn: ['INICIAR'],
    optedOut: 'Você foi descadastrado e não receberá mais mensagens nossas. Responda {keyword} para voltar a receber.',
    optedIn: 'Você voltou a receber nossas mensagens. Responda {keyword} para sair.',
  },
  es: {
    optOut: ['BAJA', 'DARSE DE BAJA', 'CANCELAR', 'PARAR'],
    optIn: ['ALTA', 'INICIAR'],
    optedOut: 'Te has dado de baja y no recibirás más mensajes nuestros. Responde {keyword} para volver a suscribirte.',
    optedIn: 'Te has suscrito de nuevo. Responde {keyword} para darte de baja.',
  },
  fr: {
    optOut: ['ARRET', 'DESABONNER'],
    optIn: ['COMMENCER'],
    optedOut: 'Vous êtes désinscrit et ne recevrez plus de messages de notre part. Répondez {keyword} pour vous réabonner.',
    optedIn: 'Vous êtes de nouveau abonné. Répondez {keyword} pour vous désabonner.',
  },
  it: {
    optOut: ['DISISCRIVI'],
    optIn: ['ISCRIVI'],
    optedOut: 'Sei stato disiscritto e non riceverai più nostri messaggi. Rispondi {keyword} per iscriverti di nuovo.',
    optedIn: 'Sei di nuovo iscritto. Rispondi {keyword} per disiscriverti.',
  },
  nl: {
    optOut: ['AFMELDEN', 'UITSCHRIJVEN'],
    optIn: ['AANMELDEN'],
    optedOut: 'Je bent afgemeld en ontvangt geen berichten meer van ons. Antwoord {keyword} om je weer aan te melden.',
    optedIn: 'Je bent weer aangemeld. Antwoord {keyword} om je af te melden.',
  },
};

const ORDER = ['en', 'de', 'pt', 'es', 'fr', 'it', 'nl'];

/** The language of a locale that has defaults (`pt-BR` → `pt`), or null. */
function languageOf(locale: string | null | undefined): string | null {
  const language = locale?.split('-')[0]?.toLowerCase();
  return language && LANGUAGES[language] ? language : null;
}

/** Each keyword once per normalised form, in the order given. */
function dedupe(list: string[]): string[] {
  const seen = new Set<string>();
  return list.filter((k) => {
    const n = normalizeKeyword(k);
    if (seen.has(n)) return false;
    seen.add(n);
    return true;
  });
}

/**
 * The default keyword lists for a workspace locale: every language's (a customer writes in its
 * own language whatever the business's), STOP and UNSUBSCRIBE first, then the locale's language.
 */
export function defaultKeywords(locale: string | null): { optOut: string[]; optIn: string[] } {
  const first = languageOf(locale);
  const languages = first && first !== 'en' ? ['en', first, ...ORDER.filter((l) => l !== 'en' && l !== first)] : ORDER;
  const pick = (kind: 'optOut' | 'optIn') => {
    const all = languages.flatMap((l) => LANGUAGES[l]![kind]);
    // The two words every carrier knows first, then the locale's language, then the rest.
    const common = kind === 'optOut' ? ['STOP', 'UNSUBSCRIBE'] : ['START', 'SUBSCRIBE'];
    return dedupe([...common, ...(first ? LANGUAGES[first]![kind] : []), ...all]);
  };
  return { optOut: pick('optOut'), optIn: pick('optIn') };
}

/** The longest text that can be a keyword (keywords are at most 40 characters). */
const MAX_KEYWORD = 40;

async function loadSettings(db: Db, workspaceId: string) {
  return db.selectFrom('opt_out_settings').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
}

type Row = Awaited<ReturnType<typeof loadSettings>>;

function view(row: Row, locale: string | null): Settings {
  const defaults = defaultKeywords(locale);
  return {
    opt_out_keywords: row?.opt_out_keywords ?? defaults.optOut,
    opt_in_keywords: row?.opt_in_keywords ?? defaults.optIn,
    confirmation: row?.confirmation ?? false,
    opt_out_confirmation: row?.opt_out_confirmation ?? null,
    opt_in_confirmation: row?.opt_in_confirmation ?? null,
    updated_at: row ? new Date(row.updated_at).toISOString() : null,
  };
}

/** The workspace's settings as they apply now (defaults for its locale where unset). */
export async function optOutSettings(db: Db, workspaceId: string): Promise<Settings> {
  const row = await loadSettings(db, workspaceId);
  return view(row, await workspaceLocale(db as Kysely<Database>, workspaceId));
}

export const getOptOutSettings: Handler<operations['getOptOutSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  return optOutSettings(request.server.platform.store.db, workspaceId);
};

export const updateOptOutSettings: Handler<operations['updateOptOutSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const row = await loadSettings(store.db, workspaceId);
  const current = view(row, await workspaceLocale(store.db, workspaceId));
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
  // A list not given stays as stored: the locale's defaults (null) keep following the locale.
  const values = {
    opt_out_keywords: body.opt_out_keywords ? JSON.stringify(out) : row?.opt_out_keywords ? JSON.stringify(row.opt_out_keywords) : null,
    opt_in_keywords: body.opt_in_keywords ? JSON.stringify(inn) : row?.opt_in_keywords ? JSON.stringify(row.opt_in_keywords) : null,
    confirmation: body.confirmation ?? current.confirmation,
    opt_out_confirmation: body.opt_out_confirmation !== undefined ? body.opt_out_confirmation : current.opt_out_confirmation,
    opt_in_confirmation: body.opt_in_confirmation !== undefined ? body.opt_in_confirmation : current.opt_in_confirmation,
    updated_at: now(),
  };
  const blankText = (['opt_out_confirmation', 'opt_in_confirmation'] as const).find((k) => values[k] !== null && !values[k]!.trim());
  if (blankText)
    throw new HttpProblem(422, 'unprocessable', 'A confirmation needs some text; null sends the default.', {
      errors: [{ pointer: `/body/${blankText}`, detail: 'is only spaces' }],
    });
  const saved = await store.db
    .insertInto('opt_out_settings')
    .values({ workspace_id: workspaceId, ...values })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(saved, await workspaceLocale(store.db, workspaceId));
};

/** Whether a whole inbound text is one of the settings' opt-out or opt-in keywords. */
export function keywordKind(settings: Pick<Settings, 'opt_out_keywords' | 'opt_in_keywords'>, text: string): 'opt_out' | 'opt_in' | null {
  const typed = normalizeKeyword(text);
  if (!typed || typed.length > MAX_KEYWORD) return null;
  if (settings.opt_out_keywords.some((k) => normalizeKeyword(k) === typed)) return 'opt_out';
  if (settings.opt_in_keywords.some((k) => normalizeKeyword(k) === typed)) return 'opt_in';
  return null;
}

/**
 * The confirmation text: the workspace's own, else the default in the language of the keyword
 * the customer wrote (else the workspace locale's, else English), naming the first keyword of
 * the workspace's other list in that language (else its first) as the way back.
 */
export function confirmationText(settings: Settings, kind: 'opt_out' | 'opt_in', written: string, locale: string | null): string {
  const own = kind === 'opt_out' ? settings.opt_out_confirmation : settings.opt_in_confirmation;
  if (own) return own;
  const typed = normalizeKeyword(written);
  const listOf = (l: string) => (kind === 'opt_out' ? LANGUAGES[l]!.optOut : LANGUAGES[l]!.optIn);
  const preferred = languageOf(locale);
  const candidates = preferred ? [preferred, ...ORDER.filter((l) => l !== preferred)] : ORDER;
  const language = candidates.find((l) => listOf(l).some((k) => normalizeKeyword(k) === typed)) ?? preferred ?? 'en';
  const texts = LANGUAGES[language]!;
  const undo = kind === 'opt_out' ? settings.opt_in_keywords : settings.opt_out_keywords;
  const ownWords = kind === 'opt_out' ? texts.optIn : texts.optOut;
  const keyword = undo.find((k) => ownWords.some((w) => normalizeKeyword(w) === normalizeKeyword(k))) ?? undo[0];
  const text = kind === 'opt_out' ? texts.optedOut : texts.optedIn;
  // No keyword to name (an empty opt-in list): the first sentence only.
  return keyword ? text.replace('{keyword}', keyword) : text.slice(0, text.indexOf('.') + 1);
}

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
  if (message.type !== 'text' || message.text === undefined || message.text.length > MAX_KEYWORD * 4) return;
  const settings = await optOutSettings(trx, message.workspaceId);
  const kind = keywordKind(settings, message.text);
  if (!kind) return;
  const at = platform.now();
  if (kind === 'opt_out') {
    await trx
      .updateTable('contacts')
      // The keyword message's time (just stored as the last inbound), so a reply to it counts as one.
      .set({ opted_out_at: sql`coalesce(last_inbound_at, ${at})`, opt_out_source: 'keyword', updated_at: at })
      .where('id', '=', message.contactId)
      .where('opted_out_at', 'is', null)
      .execute();
    await stopEnrolments(trx, [message.contactId], at);
  } else {
    await trx
      .updateTable('contacts')
      .set({ opted_out_at: null, opt_out_source: null, updated_at: at })
      .where('id', '=', message.contactId)
      .where('opted_out_at', 'is not', null)
      .execute();
  }
}

/** Sends the confirmation through the send path (deliver), the one opt-out exception it allows. */
export type SendConfirmation = (platform: Platform, workspaceId: string, phoneNumberId: string, to: string, text: string) => Promise<unknown>;

/**
 * Responder 0, before forms, flows, sequences and bots: an opt-out or opt-in keyword is answered
 * here (with the confirmation, when the workspace turned it on) and by nothing else, so a new
 * contact whose first message is STOPP starts no welcome flow.
 */
export function optOutResponder(send: SendConfirmation, log: (message: string, extra?: object) => void): InboundResponder {
  return {
    name: 'contacts.opt_out_keyword',
    order: 0,
    async respond(platform: Platform, message: InboundMessage) {
      if (message.type !== 'text' || !message.text) return false;
      const db = platform.store.db;
      const settings = await optOutSettings(db, message.workspaceId);
      const kind = keywordKind(settings, message.text);
      if (!kind) return false;
      if (!settings.confirmation) return true;
      const contact = await db.selectFrom('contacts').select(['phone', 'opted_out_at']).where('id', '=', message.contactId).executeTakeFirst();
      // The state the keyword set (a later keyword may have undone it before this ran).
      if (!contact || (kind === 'opt_out') !== (contact.opted_out_at !== null)) return true;
      const text = confirmationText(settings, kind, message.text, await workspaceLocale(db, message.workspaceId));
      try {
        await send(platform, message.workspaceId, message.phoneNumberId, contact.phone, text);
      } catch (error) {
        log('opt-out confirmation not sent', { messageId: message.messageId, error: error instanceof HttpProblem ? error.message : String(error) });
      }
      return true;
    },
  };
}

interface Recipient {
  phone: string;
  opted_out_at: Date | null;
  opt_out_source: string | null;
  last_inbound_at: Date | null;
}

/**
 * The send rule: 422 `opted-out` for a contact that opted out, unless the message is an
 * authentication template, the opt-out confirmation (`confirmation`: sent by optOutResponder,
 * free-form, while the opt-out keyword is still the customer's latest message), or a free-form
 * reply once the customer wrote again after opting out (its latest message is later than the
 * opt-out). A free-form text right after STOP ("PS: 20% off this weekend!") is refused.
 */
export async function requireNotOptedOut(
  db: Kysely<Database>,
  contact: Recipient | undefined,
  templateId: string | null | undefined,
  confirmation = false,
): Promise<void> {
  if (!contact?.opted_out_at) return;
  const optedOut = new Date(contact.opted_out_at);
  const lastInbound = contact.last_inbound_at ? new Date(contact.last_inbound_at).getTime() : null;
  if (templateId) {
    const template = await db.selectFrom('message_templates').select('category').where('id', '=', templateId).executeTakeFirst();
    if (template?.category === 'AUTHENTICATION') return;
  } else if (lastInbound !== null && (lastInbound > optedOut.getTime() || (confirmation && lastInbound >= optedOut.getTime()))) return;
  throw new HttpProblem(
    422,
    'opted-out',
    `Contact ${contact.phone} opted out (${contact.opt_out_source ?? 'api'}) on ${optedOut.toISOString()}; only authentication templates, the opt-out confirmation, and replies once the customer writes again, are sent.`,
    { errors: [{ pointer: '/body/contact_no', detail: 'opted out of messages' }] },
  );
}
