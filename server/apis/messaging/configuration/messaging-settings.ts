// Workspace-wide Messaging settings: the locale automation reads `ask` answers in when the node
// names none (numbers' separators, dates' day/month order and words). Absent: the contact's
// country's locale, else en-US (automation/answers.ts). And the country national phone numbers
// are read in (contacts, imports, flow answers): the one set, else the first number's.
import type { Kysely } from 'kysely';
import type { CountryCode } from 'libphonenumber-js/min';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { countryOfNumber, phoneCountry, requirePhone, toE164 } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';

type Settings = components['schemas']['MessagingSettings'];

async function loadSettings(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('messaging_settings').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
}

type Row = Awaited<ReturnType<typeof loadSettings>>;

/** The country of the workspace's first number (by when it was added), or null. */
async function firstNumberCountry(db: Kysely<Database>, workspaceId: string): Promise<CountryCode | null> {
  const first = await db
    .selectFrom('phone_numbers')
    .select('display_phone_number')
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
  return first ? countryOfNumber(toE164(first.display_phone_number)) : null;
}

async function view(db: Kysely<Database>, workspaceId: string, row: Row): Promise<Settings> {
  const set = phoneCountry(row?.country);
  const fromNumber = set ? null : await firstNumberCountry(db, workspaceId);
  return {
    locale: row?.locale ?? null,
    country: set ?? fromNumber,
    country_source: set ? 'settings' : fromNumber ? 'phone_number' : null,
    updated_at: row ? new Date(row.updated_at).toISOString() : null,
  };
}

/** What answers are read in: the workspace's locale (or null) and country (or null). */
export async function readingSettings(db: Kysely<Database>, workspaceId: string): Promise<{ locale: string | null; country: CountryCode | null }> {
  const row = await loadSettings(db, workspaceId);
  return { locale: row?.locale ?? null, country: phoneCountry(row?.country) ?? (await firstNumberCountry(db, workspaceId)) };
}

/** The country national numbers are read in: the one set, else the first number's, else null. */
export async function workspaceCountry(db: Kysely<Database>, workspaceId: string): Promise<CountryCode | null> {
  return phoneCountry((await loadSettings(db, workspaceId))?.country) ?? (await firstNumberCountry(db, workspaceId));
}

/**
 * A contact number as the workspace writes it, in E.164 (`requirePhone`): the workspace's country
 * is read (two queries) only for a number written without `+`, the only kind it can change.
 */
export async function requireWorkspacePhone(db: Kysely<Database>, workspaceId: string, input: string, pointer: string): Promise<string> {
  const country = input.trim().startsWith('+') ? null : await workspaceCountry(db, workspaceId);
  return requirePhone(input, country, pointer);
}

/**
 * The locale the workspace writes in: the one set, else the language of its country
 * (`BR` → pt-BR), else null.
 */
export async function workspaceWritingLocale(db: Kysely<Database>, workspaceId: string): Promise<string | null> {
  const row = await loadSettings(db, workspaceId);
  if (row?.locale) return row.locale;
  const country = phoneCountry(row?.country) ?? (await firstNumberCountry(db, workspaceId));
  return country ? localeOfCountry(country) : null;
}

/** The usual locale of a country (`BR` → pt-BR, `DE` → de-DE), or null when Intl has none. */
export function localeOfCountry(country: string): string | null {
  try {
    const language = new Intl.Locale('und', { region: country }).maximize().language;
    return canonicalLocale(`${language}-${country}`);
  } catch {
    return null;
  }
}

/** The workspace's locale for reading answers, or null. */
export async function workspaceLocale(db: Kysely<Database>, workspaceId: string): Promise<string | null> {
  return (await loadSettings(db, workspaceId))?.locale ?? null;
}

/** The canonical form of a BCP 47 tag numbers and dates can be read in, or null. */
export function canonicalLocale(tag: string): string | null {
  let canonical: string;
  try {
    [canonical = ''] = Intl.getCanonicalLocales(tag);
  } catch {
    return null;
  }
  const supported = Intl.NumberFormat.supportedLocalesOf([canonical]).length > 0 && Intl.DateTimeFormat.supportedLocalesOf([canonical]).length > 0;
  return canonical && supported ? canonical : null;
}

export const getMessagingSettings: Handler<operations['getMessagingSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  return view(db, workspaceId, await loadSettings(db, workspaceId));
};

export const updateMessagingSettings: Handler<operations['updateMessagingSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const current = await loadSettings(store.db, workspaceId);
  const given = request.body.locale;
  let locale = current?.locale ?? null;
  if (given !== undefined) {
    locale = given === null ? null : canonicalLocale(given);
    if (given !== null && locale === null)
      throw new HttpProblem(422, 'unprocessable', `${JSON.stringify(given)} is not a BCP 47 locale (like pt-PT).`, {
        errors: [{ pointer: '/body/locale', detail: 'is not a BCP 47 locale' }],
      });
  }
  const givenCountry = request.body.country;
  let country = current?.country ?? null;
  if (givenCountry !== undefined) {
    country = givenCountry === null ? null : phoneCountry(givenCountry);
    if (givenCountry !== null && country === null)
      throw new HttpProblem(422, 'unprocessable', `${JSON.stringify(givenCountry)} is not an ISO 3166-1 alpha-2 country code (like US).`, {
        errors: [{ pointer: '/body/country', detail: 'is not an ISO 3166-1 alpha-2 country code' }],
      });
  }
  const values = { locale, country, updated_at: now() };
  const row = await store.db
    .insertInto('messaging_settings')
    .values({ workspace_id: workspaceId, ...values })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(store.db, workspaceId, row);
};
