// Workspace-wide Messaging settings: the locale automation reads `ask` answers in when the node
// names none (numbers' separators, dates' day/month order and words). Absent: the contact's
// country's locale, else en-US (automation/answers.ts).
import type { Kysely } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';

type Settings = components['schemas']['MessagingSettings'];

async function loadSettings(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('messaging_settings').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
}

function view(row: Awaited<ReturnType<typeof loadSettings>>): Settings {
  return { locale: row?.locale ?? null, updated_at: row ? new Date(row.updated_at).toISOString() : null };
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
  return view(await loadSettings(request.server.platform.store.db, workspaceId));
};

export const updateMessagingSettings: Handler<operations['updateMessagingSettings']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const current = view(await loadSettings(store.db, workspaceId));
  const given = request.body.locale;
  let locale = current.locale;
  if (given !== undefined) {
    locale = given === null ? null : canonicalLocale(given);
    if (given !== null && locale === null)
      throw new HttpProblem(422, 'unprocessable', `${JSON.stringify(given)} is not a BCP 47 locale (like pt-PT).`, {
        errors: [{ pointer: '/body/locale', detail: 'is not a BCP 47 locale' }],
      });
  }
  const values = { locale, updated_at: now() };
  const row = await store.db
    .insertInto('messaging_settings')
    .values({ workspace_id: workspaceId, ...values })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(row);
};
