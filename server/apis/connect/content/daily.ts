// Reading per day: views (sessions started) and unique readers (distinct reader cookies) of a link
// or a document, each day of a range cut in the sender's IANA time zone. The instant each local
// day starts is computed here with Intl, the time zone database of the runtime, not the
// database's (PGlite has none to rely on); the database counts per day in one aggregate over the
// range on a covering index (`reader_sessions_link_day`, `reader_sessions_document_started`, with
// reader_id included: migration 044), so no session row comes to Node. Distinct readers per day
// are not additive across days or time zones, so they are counted from the sessions, exactly.
import { sql } from 'kysely';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { findLink } from './links.js';

type Series = operations['getLinkDailyAnalytics']['responses'][200]['content']['application/json'];
type DailyQuery = { time_zone?: string; from?: string; to?: string };

/** A range covers at most this many days. */
export const MAX_DAYS = 366;
const DAY_MS = 86_400_000;
/** No zone is further than this from UTC (UTC+14, UTC−12), with a margin. */
const WIDEST_OFFSET_MS = 15 * 3_600_000;

const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', 'One parameter is invalid.', { errors: [{ pointer, detail }] });

/** The zone's local date of instants, `YYYY-MM-DD`, and its offset from UTC; a name Intl does not know is 400. */
function zone(timeZone: string): { dayOf: (at: Date) => string; offsetAt: (ms: number) => number } {
  let format: Intl.DateTimeFormat;
  let parts: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    throw invalid('/query/time_zone', 'is not an IANA time zone');
  }
  const offsetAt = (ms: number) => {
    const p = Object.fromEntries(parts.formatToParts(new Date(ms)).map((x) => [x.type, Number(x.value)]));
    return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - Math.floor(ms / 1000) * 1000;
  };
  return { dayOf: (at) => format.format(at), offsetAt };
}

const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`);
const dayAfter = (day: string, n = 1) => new Date(dayStart(day) + n * DAY_MS).toISOString().slice(0, 10);

/**
 * The first instant (ms) whose local date is `day`: local midnight, found from the zone's offset;
 * where that is not it (a clock change at midnight), searched to the millisecond between the
 * widest offsets. A day is the instants from its start to the next day's start: the same as the
 * local date of each instant wherever local dates only move forward (a clock set back across
 * midnight would count its repeated time in the later day). A day a zone skipped is empty.
 */
function localDayStart(day: string, tz: ReturnType<typeof zone>): number {
  const midnight = dayStart(day);
  const guess = midnight - tz.offsetAt(midnight - tz.offsetAt(midnight));
  const starts = (ms: number) => tz.dayOf(new Date(ms)) >= day;
  if (starts(guess) && !starts(guess - 1)) return guess;
  let before = midnight - WIDEST_OFFSET_MS;
  let at = midnight + WIDEST_OFFSET_MS;
  while (at - before > 1) {
    const mid = Math.floor((before + at) / 2);
    if (starts(mid)) at = mid;
    else before = mid;
  }
  return at;
}

/** The range asked for, defaulted and checked: 30 days up to today in the zone. */
function range(query: DailyQuery, today: string): { from: string; to: string } {
  const to = query.to ?? today;
  const from = query.from ?? dayAfter(to, -29);
  if (from > to) throw invalid('/query/from', 'must not be after to');
  if ((dayStart(to) - dayStart(from)) / DAY_MS + 1 > MAX_DAYS) throw invalid('/query/to', `must be at most ${MAX_DAYS} days after from`);
  return { from, to };
}

async function series(platform: Platform, column: 'link_id' | 'document_id', id: string, query: DailyQuery): Promise<Series> {
  const timeZone = query.time_zone ?? 'UTC';
  const tz = zone(timeZone);
  const { from, to } = range(query, tz.dayOf(platform.now()));
  const dates: string[] = [];
  for (let day = from; day <= to; day = dayAfter(day)) dates.push(day);
  // bounds[i] is the start of dates[i]; the last one the end of the range.
  const bounds = [...dates, dayAfter(to)].map((day) => new Date(localDayStart(day, tz)).toISOString());
  // The link or document was found in the token's workspace, and its sessions are all of it.
  const rows = await platform.store.db
    .selectFrom('reader_sessions')
    .select([
      sql<number>`width_bucket(started_at, ${bounds}::timestamptz[])`.as('day'),
      sql<string>`count(*)`.as('views'),
      sql<string>`count(distinct reader_id)`.as('readers'),
    ])
    .where(column, '=', id)
    .where('started_at', '>=', new Date(bounds[0]!))
    .where('started_at', '<', new Date(bounds.at(-1)!))
    .groupBy(sql`1`)
    .execute();
  const counted = new Map(rows.map((r) => [Number(r.day), r]));
  return {
    time_zone: timeZone,
    from,
    to,
    // width_bucket numbers the day starting at bounds[i] i + 1.
    days: dates.map((date, i) => ({ date, views: Number(counted.get(i + 1)?.views ?? 0), unique_readers: Number(counted.get(i + 1)?.readers ?? 0) })),
  };
}

export const getLinkDailyAnalytics: Handler<operations['getLinkDailyAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  return series(platform, 'link_id', link.id, (request.query ?? {}) as DailyQuery);
};

export const getDocumentDailyAnalytics: Handler<operations['getDocumentDailyAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  return series(platform, 'document_id', document.id, (request.query ?? {}) as DailyQuery);
};
