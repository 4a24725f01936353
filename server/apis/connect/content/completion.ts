// Completion: for each reader (a keyed pseudonym of the reader cookie), the distinct pages of the
// document's current version seen over all their sessions, as a share of its page count, and the
// mean over readers. Pages beyond the current page count (an older, longer version) do not count.
import { sql } from 'kysely';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { findLink } from './links.js';

type Completion = operations['getLinkCompletion']['responses'][200]['content']['application/json'];

/** Readers listed at most (latest first). */
export const MAX_READERS = 1000;

async function completion(
  platform: Platform,
  column: 'link_id' | 'document_id',
  id: string,
  workspaceId: string,
  pageCount: number | null,
): Promise<Completion> {
  const rows = await platform.store.db
    .selectFrom('reader_sessions as s')
    .leftJoin('reader_page_stats as p', (join) => join.onRef('p.session_id', '=', 's.id').on('p.views', '>', 0))
    .where(`s.${column}`, '=', id)
    .where('s.workspace_id', '=', workspaceId)
    .groupBy('s.reader_id')
    .select([
      's.reader_id',
      sql<string>`count(distinct s.id)`.as('sessions'),
      sql<string>`count(distinct p.page) filter (where p.page <= ${pageCount ?? 2_147_483_647})`.as('pages_seen'),
      sql<Date>`max(s.started_at)`.as('last_opened_at'),
    ])
    .orderBy(sql`max(s.started_at)`, 'desc')
    .limit(MAX_READERS)
    .execute();
  const readers = rows.map((r) => {
    const seen = Number(r.pages_seen);
    return {
      reader: `rdr_${platform.secrets.digest(`reader\0${workspaceId}\0${r.reader_id}`).slice(0, 16)}`,
      sessions: Number(r.sessions),
      pages_seen: seen,
      completion: pageCount ? Math.min(1, seen / pageCount) : null,
      last_opened_at: new Date(r.last_opened_at).toISOString(),
    };
  });
  const shares = readers.flatMap((r) => (r.completion === null ? [] : [r.completion]));
  return {
    page_count: pageCount,
    average_completion: shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : null,
    readers,
  };
}

export const getLinkCompletion: Handler<operations['getLinkCompletion']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const link = await findLink(platform, workspaceId, request.params.linkId);
  const document = await platform.store.db.selectFrom('documents').select('page_count').where('id', '=', link.document_id).executeTakeFirstOrThrow();
  return completion(platform, 'link_id', link.id, workspaceId, document.page_count);
};

export const getDocumentCompletion: Handler<operations['getDocumentCompletion']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  return completion(platform, 'document_id', document.id, workspaceId, document.page_count);
};
