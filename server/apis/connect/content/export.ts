// Reader sessions as CSV (RFC 4180), streamed: pages of 500 sessions read in keyset order
// (started_at, id) while the previous ones are written, so an export of any size holds one page
// in memory. Fields that a spreadsheet would run as a formula are prefixed with `'`.
import { Readable } from 'node:stream';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { findLink } from './links.js';

const PAGE = 500;
const HEADER = ['session_id', 'link_id', 'external_id', 'reader', 'version', 'device', 'started_at', 'ended_at', 'duration_ms', 'pages_viewed', 'downloaded'];

/** One CSV field: formula-like text neutralised, then quoted when it holds a separator, quote or line break. */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const line = (fields: (string | number | boolean | null)[]) => `${fields.map(csvField).join(',')}\r\n`;

async function* rows(platform: Platform, column: 'link_id' | 'document_id', id: string, workspaceId: string): AsyncGenerator<string> {
  const db = platform.store.db;
  yield line(HEADER);
  let after: { startedAt: Date; id: string } | undefined;
  for (;;) {
    let query = db
      .selectFrom('reader_sessions as s')
      .innerJoin('links as l', 'l.id', 's.link_id')
      .select(['s.id', 's.link_id', 'l.external_id', 's.reader_id', 's.version', 's.device', 's.started_at', 's.ended_at', 's.duration_ms', 's.downloaded'])
      .select((eb) =>
        eb
          .selectFrom('reader_page_stats as p')
          .whereRef('p.session_id', '=', 's.id')
          .where('p.views', '>', 0)
          .select((e) => e.fn.countAll<string>().as('n'))
          .as('pages_viewed'),
      )
      .where(`s.${column}`, '=', id)
      .where('s.workspace_id', '=', workspaceId);
    const cursor = after;
    if (cursor) query = query.where((eb) => eb(eb.refTuple('s.started_at', 's.id'), '>', eb.tuple(cursor.startedAt, cursor.id)));
    const page = await query.orderBy('s.started_at').orderBy('s.id').limit(PAGE).execute();
    for (const s of page) {
      yield line([
        s.id,
        s.link_id,
        s.external_id,
        `rdr_${platform.secrets.digest(`reader\0${workspaceId}\0${s.reader_id}`).slice(0, 16)}`,
        s.version,
        s.device,
        s.started_at.toISOString(),
        s.ended_at?.toISOString() ?? null,
        Number(s.duration_ms),
        Number(s.pages_viewed ?? 0),
        s.downloaded,
      ]);
    }
    if (page.length < PAGE) return;
    const last = page.at(-1)!;
    after = { startedAt: last.started_at, id: last.id };
  }
}

function send(reply: Parameters<Handler<operations['exportLinkSessions']>>[1], id: string, body: AsyncGenerator<string>) {
  return reply
    .headers({ 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="sessions-${id}.csv"`, 'cache-control': 'no-store' })
    .send(Readable.from(body));
}

export const exportLinkSessions: Handler<operations['exportLinkSessions']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  return send(reply, link.id, rows(platform, 'link_id', link.id, workspaceId));
};

export const exportDocumentSessions: Handler<operations['exportDocumentSessions']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  return send(reply, document.id, rows(platform, 'document_id', document.id, workspaceId));
};
