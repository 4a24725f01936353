// Reading analytics, read from the rollups kept with every view (reading.ts, migration 044): exact
// counts, nothing estimated. A view is a session; unique readers are distinct verified phones,
// else viewer cookies.
import { sql } from 'kysely';
import type { components, operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeCursor, encodeCursor, invalidCursor } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { findLink } from './links.js';
import { pageStats, sessionView, type PageRow } from './views.js';

type Schemas = components['schemas'];
type Totals = Omit<Schemas['LinkAnalytics'], 'link_id' | 'document_id' | 'external_id'>;
type ListQuery = NonNullable<operations['listReaderSessions']['parameters']['query']>;

/** The `version` asked for, checked against the document's versions (400 when it is none of them). */
async function checkedVersion(platform: Platform, documentId: string, version: number | undefined): Promise<number | undefined> {
  if (version === undefined) return undefined;
  const row = await platform.store.db
    .selectFrom('document_versions')
    .select('version')
    .where('document_id', '=', documentId)
    .where('version', '=', version)
    .executeTakeFirst();
  if (!row)
    throw new HttpProblem(400, 'validation', 'One parameter is invalid.', {
      errors: [{ pointer: '/query/version', detail: 'is not a version of this document' }],
    });
  return version;
}

/**
 * The totals of a link or a document (`documentId` with `linkId` '' for the document over all its
 * links), of one version or all: one row of reading_totals and the scope's rows of reading_pages
 * (reading.ts keeps them with every view), plus the links' download counters.
 */
async function totals(platform: Platform, documentId: string, linkId: string, workspaceId: string, version?: number): Promise<Totals> {
  const db = platform.store.db;
  const scope = { document_id: documentId, link_id: linkId, version: version ?? 0 };
  const summary = await db
    .selectFrom('reading_totals')
    .select(['views', 'readers', 'time_ms', 'downloaded_sessions', 'first_opened_at', 'last_opened_at'])
    .where('document_id', '=', scope.document_id)
    .where('link_id', '=', scope.link_id)
    .where('version', '=', scope.version)
    .executeTakeFirst();
  // The links count every download; sessions record whether theirs downloaded, which is what a
  // version's totals can count.
  const downloads =
    version === undefined
      ? (
          await db
            .selectFrom('links')
            .$if(linkId !== '', (q) => q.where('id', '=', linkId))
            .where('document_id', '=', documentId)
            .where('workspace_id', '=', workspaceId)
            .select(sql<string>`coalesce(sum(downloads), 0)`.as('downloads'))
            .executeTakeFirstOrThrow()
        ).downloads
      : (summary?.downloaded_sessions ?? 0);
  const pages = await db
    .selectFrom('reading_pages')
    .select(['page', 'views', 'time_ms'])
    .where('document_id', '=', scope.document_id)
    .where('link_id', '=', scope.link_id)
    .where('version', '=', scope.version)
    .orderBy('page')
    .execute();
  const date = (value: Date | null | undefined) => (value ? new Date(value).toISOString() : null);
  return {
    views: Number(summary?.views ?? 0),
    unique_readers: Number(summary?.readers ?? 0),
    downloads: Number(downloads),
    total_time_ms: Number(summary?.time_ms ?? 0),
    pages: pageStats(pages.map((p) => ({ session_id: '', page: p.page, views: Number(p.views), time_ms: p.time_ms }))),
    first_opened_at: date(summary?.first_opened_at),
    last_opened_at: date(summary?.last_opened_at),
  };
}

export const getLinkAnalytics: Handler<operations['getLinkAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  const version = await checkedVersion(platform, link.document_id, (request.query as { version?: number } | undefined)?.version);
  return {
    link_id: link.id,
    document_id: link.document_id,
    external_id: link.external_id,
    ...(await totals(platform, link.document_id, link.id, workspaceId, version)),
  };
};

export const getDocumentAnalytics: Handler<operations['getDocumentAnalytics']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  const version = await checkedVersion(platform, document.id, (request.query as { version?: number } | undefined)?.version);
  const links = await platform.store.db
    .selectFrom('links')
    .where('document_id', '=', document.id)
    .where('workspace_id', '=', workspaceId)
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .executeTakeFirstOrThrow();
  return { document_id: document.id, links: Number(links.count), ...(await totals(platform, document.id, '', workspaceId, version)) };
};

export const listReaderSessions: Handler<operations['listReaderSessions']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  // Bound to the link too: a cursor of another link's sessions is refused like any foreign one.
  const scope = { workspaceId, operation: `listReaderSessions:${request.params.linkId}` };
  const position = decodeCursor(platform.secrets, scope, cursor);
  const after = position && { startedAt: new Date(String(position.t)), id: String(position.id) };
  if (after && (typeof position?.t !== 'string' || Number.isNaN(after.startedAt.getTime()))) throw invalidCursor();
  const link = await findLink(platform, workspaceId, request.params.linkId);
  const db = platform.store.db;
  let query = db.selectFrom('reader_sessions').selectAll().where('link_id', '=', link.id).where('workspace_id', '=', workspaceId);
  if (after) query = query.where((eb) => eb(eb.refTuple('started_at', 'id'), '<', eb.tuple(after.startedAt, after.id)));
  const rows = await query
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit);
  const document = await db.selectFrom('documents').select('page_count').where('id', '=', link.document_id).executeTakeFirstOrThrow();
  const pages: PageRow[] = items.length
    ? await db
        .selectFrom('reader_page_stats')
        .selectAll()
        .where(
          'session_id',
          'in',
          items.map((s) => s.id),
        )
        .execute()
    : [];
  const last = items.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    data: items.map((s) =>
      sessionView(
        s,
        pages.filter((p) => p.session_id === s.id),
        document.page_count,
      ),
    ),
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(platform.secrets, scope, { t: last.started_at.toISOString(), id: last.id }) : null,
  };
};
