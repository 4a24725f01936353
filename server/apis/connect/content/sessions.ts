// Reader sessions: opened by the viewer page (`link.opened`), advanced by the page's activity
// beacons, ended by the tab closing or 30 minutes without activity. `session.updated` is
// throttled: at most one per session every 30 s while it is open (later activity waits for the
// sweeper), and one when it ends. The sweeper sleeps until the earliest of those is due
// (`nextSweep`), woken by activity that holds an update back (../../../lib/due-loop.ts).
import { sql, type Transaction } from 'kysely';
import type { components } from '#generated/connect/types.js';
import { base62, newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { yieldToRequests } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { emitSessionEvent } from './events.js';
import { countDownloadedSession, countOpening, countPages, countReadingTime } from './reading.js';
import { linkStatus, type DocumentRow, type LinkRow, type SessionRow } from './views.js';

type Device = components['schemas']['ReaderDevice'];
type Tx = Transaction<Database>;

export const SESSION_LIMITS = {
  /** A session with no activity for this long is over. */
  idleMs: 30 * 60_000,
  /** At most one session.updated per session in this interval while it is open. */
  updateEveryMs: 30_000,
  /** Reported reading time may exceed the wall-clock time since the last beacon by this much. */
  clockSlackMs: 5_000,
};

/** The kind of device, from the User-Agent (tablets first: Android tablets omit "Mobile"). */
export function deviceOf(userAgent: string | undefined): Device {
  const ua = userAgent ?? '';
  if (/iPad|Tablet|PlayBook|Silk|Kindle|Nexus (7|9|10)\b|SM-T\d|Android(?!.*Mobile)/i.test(ua)) return 'tablet';
  if (/Mobi|iPhone|iPod|Android|Windows Phone|BlackBerry|BB10|Opera Mini|IEMobile/i.test(ua)) return 'mobile';
  if (/Windows NT|Macintosh|Mac OS X|X11|Linux|CrOS/i.test(ua)) return 'desktop';
  return 'unknown';
}

/** Link-preview fetchers and crawlers: they get the page but open no session and send no event. */
export function isPreviewBot(userAgent: string | undefined): boolean {
  return /facebookexternalhit|Facebot|WhatsApp|Slackbot|Slack-ImgProxy|TelegramBot|Discordbot|Twitterbot|LinkedInBot|SkypeUriPreview|Googlebot|bingbot|Applebot|DuckDuckBot|YandexBot|Baiduspider|Embedly|redditbot|Pinterestbot|iMessage|MicrosoftPreview/i.test(
    userAgent ?? '',
  );
}

/** Pages the viewer shows itself (PDF, images); office files are only offered for download. */
export function rendersInline(contentType: string): boolean {
  return contentType === 'application/pdf' || contentType.startsWith('image/');
}

export interface OpenedSession {
  session: SessionRow;
  token: string;
}

/**
 * Opens a session on an active link: the row, page 1 shown (when the viewer renders the file),
 * the link's last opening and `link.opened`, in one transaction. Null when the link stopped
 * being active meanwhile.
 */
export async function openSession(
  platform: Platform,
  linkId: string,
  document: DocumentRow,
  readerId: string,
  userAgent: string | undefined,
  verifiedPhone: string | null = null,
): Promise<OpenedSession | null> {
  const now = platform.now();
  const token = base62(32);
  return platform.store.db.transaction().execute(async (tx) => {
    const link = await tx.selectFrom('links').selectAll().where('id', '=', linkId).forUpdate().executeTakeFirst();
    if (!link || linkStatus(link, now) !== 'active') return null;
    const session = await tx
      .insertInto('reader_sessions')
      .values({
        id: newId('rs'),
        workspace_id: link.workspace_id,
        link_id: link.id,
        document_id: link.document_id,
        reader_id: readerId,
        token_digest: platform.secrets.digest(`reader-session\0${token}`),
        device: deviceOf(userAgent),
        verified_phone: verifiedPhone,
        started_at: now,
        last_activity_at: now,
        last_event_at: now,
        duration_ms: 0,
        version: document.version, // the version shown: the pinned one, or the current one
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await countOpening(tx, session);
    if (rendersInline(document.content_type)) {
      await tx.insertInto('reader_page_stats').values({ session_id: session.id, page: 1, views: 1, time_ms: 0 }).execute();
      await countPages(tx, session, [{ page: 1, views: 1, time_ms: 0 }]);
    }
    await tx.updateTable('links').set({ last_opened_at: now }).where('id', '=', link.id).execute();
    await emitSessionEvent(tx, platform, 'link.opened', session, now);
    return { session, token };
  });
}

export interface Beacon {
  token: string;
  pages?: { page: number; views: number; ms: number }[];
  ended?: boolean;
}

const notFound = () => new HttpProblem(404, 'not-found', 'No open reader session with this id and token.');

/** Applies one activity beacon of the viewer; anything wrong changes nothing. */
export async function applyBeacon(platform: Platform, slug: string, sessionId: string, beacon: Beacon): Promise<void> {
  const now = platform.now();
  await platform.store.db.transaction().execute(async (tx) => {
    const session = await tx.selectFrom('reader_sessions').selectAll().where('id', '=', sessionId).forUpdate().executeTakeFirst();
    // One answer for an unknown session, another link's session and a wrong token: no oracle.
    if (!session || !platform.secrets.matches(`reader-session\0${beacon.token}`, session.token_digest)) throw notFound();
    const link = await tx.selectFrom('links').selectAll().where('id', '=', session.link_id).executeTakeFirstOrThrow();
    if (link.slug !== slug) throw notFound();
    if (session.ended_at) throw new HttpProblem(409, 'conflict', 'This reader session has ended.');
    if (linkStatus(link, now) !== 'active') throw new HttpProblem(410, 'expired', 'This link is no longer active.');
    // The pages of the version this session was shown.
    const document = await tx
      .selectFrom('document_versions')
      .select('page_count')
      .where('document_id', '=', session.document_id)
      .where('version', '=', session.version)
      .executeTakeFirstOrThrow();
    const pages = beacon.pages ?? [];
    const maxPage = document.page_count ?? 100_000;
    const errors = pages.flatMap((p, i) => (p.page > maxPage ? [{ pointer: `/body/pages/${i}/page`, detail: `must be at most ${maxPage}` }] : []));
    if (new Set(pages.map((p) => p.page)).size !== pages.length) errors.push({ pointer: '/body/pages', detail: 'must list each page once' });
    if (errors.length) throw new HttpProblem(400, 'validation', 'One or more inputs are invalid; see errors.', { errors });

    // A page cannot report more reading than time has passed since its last report.
    let budget = Math.max(0, now.getTime() - session.last_activity_at.getTime()) + SESSION_LIMITS.clockSlackMs;
    let added = 0;
    const read: { page: number; views: number; time_ms: number }[] = [];
    for (const p of pages) {
      const ms = Math.min(p.ms, budget);
      budget -= ms;
      added += ms;
      if (p.views || ms) read.push({ page: p.page, views: p.views, time_ms: ms });
    }
    // The rollups first (reading.ts: totals, then pages, in every transaction).
    await countReadingTime(tx, session, added);
    await countPages(tx, session, read);
    for (const p of read) {
      await tx
        .insertInto('reader_page_stats')
        .values({ session_id: session.id, ...p })
        .onConflict((oc) =>
          oc.columns(['session_id', 'page']).doUpdateSet({
            views: sql`reader_page_stats.views + excluded.views`,
            time_ms: sql`reader_page_stats.time_ms + excluded.time_ms`,
          }),
        )
        .execute();
    }
    const ended = beacon.ended === true;
    const due = ended || now.getTime() - session.last_event_at.getTime() >= SESSION_LIMITS.updateEveryMs;
    const updated = await tx
      .updateTable('reader_sessions')
      .set({
        last_activity_at: now,
        duration_ms: sql`duration_ms + ${added}`,
        ended_at: ended ? now : null,
        ...(due ? { last_event_at: now, pending_update: false } : { pending_update: true }),
      })
      .where('id', '=', session.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (due) await emitSessionEvent(tx, platform, 'session.updated', updated, now);
  });
}

/** Marks a download: the link's counter, and the session when the reader's cookie owns it. */
export async function recordDownload(platform: Platform, link: LinkRow, sessionId: string | undefined, readerId: string | undefined): Promise<void> {
  const now = platform.now();
  await platform.store.db.transaction().execute(async (tx) => {
    await tx.updateTable('links').set({ downloads: sql`downloads + 1` }).where('id', '=', link.id).execute();
    if (!sessionId || !readerId) return;
    const session = await tx
      .selectFrom('reader_sessions')
      .selectAll()
      .where('id', '=', sessionId)
      .where('link_id', '=', link.id)
      .where('reader_id', '=', readerId)
      .where('ended_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!session || session.downloaded) return;
    await countDownloadedSession(tx, session);
    await settle(tx, platform, session, { downloaded: true, last_activity_at: now }, now);
  });
}

/** Applies `changes` and emits session.updated now if due, else marks it pending. */
async function settle(
  tx: Tx,
  platform: Platform,
  session: SessionRow,
  changes: { downloaded?: boolean; last_activity_at?: Date; ended_at?: Date },
  now: Date,
): Promise<void> {
  const due = changes.ended_at !== undefined || now.getTime() - session.last_event_at.getTime() >= SESSION_LIMITS.updateEveryMs;
  const updated = await tx
    .updateTable('reader_sessions')
    .set({ ...changes, ...(due ? { last_event_at: now, pending_update: false } : { pending_update: true }) })
    .where('id', '=', session.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  if (due) await emitSessionEvent(tx, platform, 'session.updated', updated, now);
}

/** When the sweep next has something to do: a session's idle end or its held-back update (null: none open). */
export async function nextSweep(platform: Platform): Promise<Date | null> {
  const row = await platform.store.db
    .selectFrom('reader_sessions')
    .select(
      sql<Date | null>`min(least(last_activity_at + ${SESSION_LIMITS.idleMs}::int * interval '1 millisecond',
        case when pending_update then last_event_at + ${SESSION_LIMITS.updateEveryMs}::int * interval '1 millisecond' end))`.as('due'),
    )
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return row?.due ? new Date(row.due) : null;
}

/** Sweeps until nothing is due, letting requests in between batches; answers when the next row is due. */
export async function sweepDue(platform: Platform, batch = 100): Promise<Date | null> {
  while ((await sweepSessions(platform, batch)) === batch) await yieldToRequests();
  return nextSweep(platform);
}

/**
 * Ends sessions idle for 30 minutes (their end is their last activity) and sends the
 * session.updated that throttling held back. Rows are claimed with SKIP LOCKED, so instances
 * sharing a database never send one twice. Answers how many sessions it touched.
 */
export async function sweepSessions(platform: Platform, batch = 100): Promise<number> {
  const now = platform.now();
  const idleBefore = new Date(now.getTime() - SESSION_LIMITS.idleMs);
  const dueBefore = new Date(now.getTime() - SESSION_LIMITS.updateEveryMs);
  return platform.store.db.transaction().execute(async (tx) => {
    const rows = await tx
      .selectFrom('reader_sessions')
      .selectAll()
      .where('ended_at', 'is', null)
      .where((eb) => eb.or([eb('last_activity_at', '<=', idleBefore), eb.and([eb('pending_update', '=', true), eb('last_event_at', '<=', dueBefore)])]))
      .orderBy('last_activity_at')
      .limit(batch)
      .forUpdate()
      .skipLocked()
      .execute();
    for (const session of rows) {
      const idle = session.last_activity_at.getTime() <= idleBefore.getTime();
      await settle(tx, platform, session, idle ? { ended_at: session.last_activity_at } : {}, now);
    }
    return rows.length;
  });
}
