// The reading rollups (migration 044_reading_rollups), written in the transaction that records a
// view, its reading or its download, so that analytics read a few rows instead of every session.
// A session counts in four scopes: its link and version, its link (version 0), its document and
// version, its document (link ''). Each write is an upsert (`on conflict do update` adds to the
// row), so concurrent views never lose a count. Rows are written in primary-key order, and the
// reader keys before the totals before the pages, in every transaction: two transactions on one
// document always lock its rows in the same order and cannot deadlock.
import { sql, type Transaction } from 'kysely';
import type { Database } from '#server/store/schema.js';
import type { SessionRow } from './views.js';

type Tx = Transaction<Database>;
type Session = Pick<SessionRow, 'document_id' | 'link_id' | 'version'>;
interface Scope {
  document_id: string;
  link_id: string;
  version: number;
}

/** The session's four scopes, in primary-key order (the document's before the link's, all versions first). */
export function scopesOf(session: Session): Scope[] {
  const d = session.document_id;
  return [
    { document_id: d, link_id: '', version: 0 },
    { document_id: d, link_id: '', version: session.version },
    { document_id: d, link_id: session.link_id, version: 0 },
    { document_id: d, link_id: session.link_id, version: session.version },
  ];
}

/** The key unique readers are told apart by: the verified phone, else the viewer's cookie. */
export const readerKeyOf = (session: Pick<SessionRow, 'verified_phone' | 'reader_id'>) => session.verified_phone ?? session.reader_id;

interface TotalsDelta {
  views?: number;
  readers?: (scope: Scope) => number;
  time_ms?: number;
  downloaded_sessions?: number;
  opened_at?: Date;
}

async function addTotals(tx: Tx, session: Session, delta: TotalsDelta): Promise<void> {
  await tx
    .insertInto('reading_totals')
    .values(
      scopesOf(session).map((scope) => ({
        ...scope,
        views: delta.views ?? 0,
        readers: delta.readers?.(scope) ?? 0,
        time_ms: delta.time_ms ?? 0,
        downloaded_sessions: delta.downloaded_sessions ?? 0,
        first_opened_at: delta.opened_at ?? null,
        last_opened_at: delta.opened_at ?? null,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['document_id', 'link_id', 'version']).doUpdateSet({
        views: sql`reading_totals.views + excluded.views`,
        readers: sql`reading_totals.readers + excluded.readers`,
        time_ms: sql`reading_totals.time_ms + excluded.time_ms`,
        downloaded_sessions: sql`reading_totals.downloaded_sessions + excluded.downloaded_sessions`,
        // least/greatest skip nulls: a delta without an opening keeps the row's.
        first_opened_at: sql`least(reading_totals.first_opened_at, excluded.first_opened_at)`,
        last_opened_at: sql`greatest(reading_totals.last_opened_at, excluded.last_opened_at)`,
      }),
    )
    .execute();
}

/** Adds views and time to pages (each listed once) in the session's four scopes. */
export async function countPages(tx: Tx, session: Session, pages: { page: number; views: number; time_ms: number }[]): Promise<void> {
  if (!pages.length) return;
  const sorted = [...pages].sort((a, b) => a.page - b.page);
  await tx
    .insertInto('reading_pages')
    .values(scopesOf(session).flatMap((scope) => sorted.map((p) => ({ ...scope, page: p.page, views: p.views, time_ms: p.time_ms }))))
    .onConflict((oc) =>
      oc.columns(['document_id', 'link_id', 'version', 'page']).doUpdateSet({
        views: sql`reading_pages.views + excluded.views`,
        time_ms: sql`reading_pages.time_ms + excluded.time_ms`,
      }),
    )
    .execute();
}

/**
 * A new session: one view in each scope, one reader more in the scopes that had not counted its
 * reader key yet (the insert into reading_readers answers which; a concurrent insert of the same
 * key waits for the first to commit, then finds it), its start as first and last opening.
 */
export async function countOpening(tx: Tx, session: SessionRow): Promise<void> {
  const key = readerKeyOf(session);
  const fresh = await tx
    .insertInto('reading_readers')
    .values(scopesOf(session).map((scope) => ({ ...scope, reader_key: key })))
    .onConflict((oc) => oc.doNothing())
    .returning(['link_id', 'version'])
    .execute();
  const isFresh = (scope: Scope) => (fresh.some((f) => f.link_id === scope.link_id && f.version === scope.version) ? 1 : 0);
  await addTotals(tx, session, { views: 1, readers: isFresh, opened_at: session.started_at });
}

/** Reading time a beacon added to the session (its pages are counted by countPages, after this). */
export async function countReadingTime(tx: Tx, session: Session, ms: number): Promise<void> {
  if (ms > 0) await addTotals(tx, session, { time_ms: ms });
}

/** The session downloaded the original file (counted once per session). */
export async function countDownloadedSession(tx: Tx, session: Session): Promise<void> {
  await addTotals(tx, session, { downloaded_sessions: 1 });
}
