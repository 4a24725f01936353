// Reading per day: views (sessions started) and unique readers (distinct reader cookies) of a link
// or a document, each day of a range cut in the sender's IANA time zone. Days are computed here
// with Intl, the time zone database of the runtime, not the database's (PGlite has none to rely
// on); the sessions of the range are read once, bounded by the range plus the widest UTC offsets.
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

/** The zone's local date of instants, `YYYY-MM-DD`; a name Intl does not know is 400. */
function dayFormatter(timeZone: string): (at: Date) => string {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  } catch {
    throw invalid('/query/time_zone', 'is not an IANA time zone');
  }
  return (at) => format.format(at);
}

const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`);
const dayAfter = (day: string, n = 1) => new Date(dayStart(day) + n * DAY_MS).toISOString().slice(0, 10);

/** The range asked for, defaulted and checked: 30 days up to today in the zone. */
function range(query: DailyQuery, today: string): { from: string; to: string } {
  const to = query.to ?? today;
  const from = query.from ?? dayAfter(to, -29);
  if (from > to) throw invalid('/query/from', 'must not be after to');
  if ((dayStart(to) - dayStart(from)) / DAY_MS + 1 > MAX_DAYS) throw invalid('/query/to', `must be at most ${MAX_DAYS} days after from`);
  return { from, to };
}

async function series(platform: Platform, column: 'link_id' | 'document_id', id: string, workspaceId: string, query: DailyQuery): Promise<Series> {
  const timeZone = query.time_zone ?? 'UTC';
  const dayOf = dayFormatter(timeZone);
  const { from, to } = range(query, dayOf(platform.now()));
  const rows = await platform.store.db
    .selectFrom('reader_sessions')
    .select(['started_at', 'reader_id'])
    .where(column, '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('started_at', '>=', new Date(dayStart(from) - WIDEST_OFFSET_MS))
    .where('started_at', '<', new Date(dayStart(to) + DAY_MS + WIDEST_OFFSET_MS))
    .execute();
  const days = new Map<string, { views: number; readers: Set<string> }>();
  for (let day = from; day <= to; day = dayAfter(day)) days.set(day, { views: 0, readers: new Set() });
  for (const row of rows) {
    const bucket = days.get(dayOf(row.started_at));
    if (!bucket) continue; // just outside the range in this zone
    bucket.views++;
    bucket.readers.add(row.reader_id);
  }
  return {
    time_zone: timeZone,
    from,
    to,
    days: [...days].map(([date, b]) => ({ date, views: b.views, unique_readers: b.readers.size })),
  };
}

export const getLinkDailyAnalytics: Handler<operations['getLinkDailyAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  return series(platform, 'link_id', link.id, workspaceId, (request.query ?? {}) as DailyQuery);
};

export const getDocumentDailyAnalytics: Handler<operations['getDocumentDailyAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  return series(platform, 'document_id', document.id, workspaceId, (request.query ?? {}) as DailyQuery);
};
