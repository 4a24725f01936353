// Reader sessions as CSV (RFC 4180), streamed in (started_at, id) order, on the indexes that have
// that order (reader_sessions_document_started, reader_sessions_link): the database writes each
// line (fields that a spreadsheet would run as a formula prefixed with `'`) but the reader's
// pseudonym, a keyed digest made here. On PostgreSQL one `COPY (select …) TO STDOUT` at the
// database's speed with the socket's backpressure (#server/store/copy-out.ts); on PGlite, or when
// the instance already runs its share of COPYs, keyset pages of 5,000. Memory stays flat.
import { Readable } from 'node:stream';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { containsAnyOf, firstCharIn } from '#server/lib/csv-sql.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { findLink } from './links.js';

const PAGE = 5000;
const lit = (value: string) => pg.escapeLiteral(value);
const HEADER = ['session_id', 'link_id', 'external_id', 'reader', 'version', 'device', 'started_at', 'ended_at', 'duration_ms', 'pages_viewed', 'downloaded'];

/** One CSV field: formula-like text neutralised, then quoted when it holds a separator, quote or line break. */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * `csvField` of a text column (null: empty) in SQL, byte for byte; `value` is read several times:
 * pass a column. The checks are #server/lib/csv-sql.ts's: = + @ tab CR - first, " , CR LF anywhere.
 */
function csvFieldSql(value: string): string {
  const text = `(case when ${firstCharIn(value, [61, 43, 64, 9, 13, 45])} then '''' else '' end) || ${value}`;
  return `coalesce(case when ${containsAnyOf(value, [34, 44, 13, 10])} then '"' || replace(${text}, '"', '""') || '"' else ${text} end, '')`;
}

/** Times as toISOString writes them (milliseconds, truncated as the driver's dates are). */
const iso = (value: string) => `to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The sessions in SQL, in (started_at, id) order: each row the line's text before the reader
 * column, the reader id (its pseudonym is a keyed digest, made in Node: the key never goes to
 * the database) and the rest of the line (CRLF included). With `page`, one keyset page of PAGE.
 */
function sessionsQuery(column: 'link_id' | 'document_id', id: string, workspaceId: string, page?: { after?: { at: string; id: string } }): string {
  const after = page?.after ? `and (s.started_at, s.id) > (${lit(page.after.at)}::timestamptz, ${lit(page.after.id)})` : '';
  const rows = `select s.id, s.link_id, l.external_id, s.reader_id, s.version, s.device, s.started_at, s.ended_at, s.duration_ms, s.downloaded,
      (select count(*) from reader_page_stats p where p.session_id = s.id and p.views > 0) as pages_viewed
    from reader_sessions s join links l on l.id = s.link_id
    where s.${column} = ${lit(id)} and s.workspace_id = ${lit(workspaceId)} ${after}
    order by s.started_at, s.id${page ? ` limit ${PAGE}` : ''}`;
  const before = [csvFieldSql('id'), csvFieldSql('link_id'), csvFieldSql('external_id')].join(` || ',' || `);
  const rest = [
    'version::text',
    csvFieldSql('device'),
    iso('started_at'),
    `coalesce(${iso('ended_at')}, '')`,
    'duration_ms::text',
    'pages_viewed::text',
    `(case when downloaded then 'true' else 'false' end)`,
  ].join(` || ',' || `);
  return `select ${before} || ',' as before, reader_id, ',' || ${rest} || E'\\r\\n' as after${page ? ', started_at::text as at, id' : ''} from (${rows}) s`;
}

/** The reader column: a pseudonym per reader, the same in every export of the workspace. */
function readers(platform: Platform, workspaceId: string): (readerId: string) => string {
  const made = new Map<string, string>();
  return (readerId) => {
    let pseudonym = made.get(readerId);
    if (pseudonym === undefined) {
      pseudonym = `rdr_${platform.secrets.digest(`reader\0${workspaceId}\0${readerId}`).slice(0, 16)}`;
      if (made.size >= 10_000) made.clear();
      made.set(readerId, pseudonym);
    }
    return pseudonym;
  };
}

async function body(platform: Platform, column: 'link_id' | 'document_id', id: string, workspaceId: string): Promise<Readable> {
  const head = `${HEADER.join(',')}\r\n`;
  const reader = readers(platform, workspaceId);
  const copied = await platform.store.copyOut?.(async () => ({
    select: sessionsQuery(column, id, workspaceId),
    head,
    row: (fields, out) => {
      out.push(fields[0]!, reader(fields[1]!.toString()), fields[2]!);
    },
  }));
  if (copied) return copied;
  const db = platform.store.db;
  async function* pages(): AsyncGenerator<string> {
    yield head;
    let after: { at: string; id: string } | undefined;
    for (;;) {
      const { rows } = await db.executeQuery<{ before: string; reader_id: string; after: string; at: string; id: string }>(
        CompiledQuery.raw(sessionsQuery(column, id, workspaceId, { after })),
      );
      let chunk = '';
      for (const r of rows) chunk += r.before + reader(r.reader_id) + r.after;
      yield chunk;
      if (rows.length < PAGE) return;
      const last = rows.at(-1)!;
      after = { at: last.at, id: last.id };
    }
  }
  return Readable.from(pages());
}

function send(reply: Parameters<Handler<operations['exportLinkSessions']>>[1], id: string, body: Readable) {
  return reply
    .headers({ 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="sessions-${id}.csv"`, 'cache-control': 'no-store' })
    .send(body);
}

export const exportLinkSessions: Handler<operations['exportLinkSessions']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  return send(reply, link.id, await body(platform, 'link_id', link.id, workspaceId));
};

export const exportDocumentSessions: Handler<operations['exportDocumentSessions']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  return send(reply, document.id, await body(platform, 'document_id', document.id, workspaceId));
};
