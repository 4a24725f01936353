// The Connect events about links and reader sessions (spec/webhooks/connect.tsp), each emitted in
// the transaction of the change it reports (emitEvent writes the outbox rows there).
import type { Selectable, Transaction } from 'kysely';
import type { components } from '#generated/connect/types.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { DocumentVersionsTable } from '#server/store/schema/connect-content.js';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { eventContext, eventSession, type DocumentRow, type LinkRow, type PageRow, type SessionRow } from './views.js';

type Schemas = components['schemas'];
type Tx = Transaction<Database>;
type VersionRow = Selectable<DocumentVersionsTable>;

/**
 * Revokes the document's active links (or the one link `linkId`) and sends `link.revoked` for
 * each; links already revoked or expired are left as they are. Answers the revoked rows.
 */
export async function revokeLinks(
  tx: Tx,
  platform: Platform,
  document: DocumentRow,
  linkId: string | null,
  reason: Schemas['LinkRevokedData']['reason'],
  now: Date,
): Promise<LinkRow[]> {
  let query = tx
    .updateTable('links')
    .set({ revoked_at: now, revoke_reason: reason })
    .where('workspace_id', '=', document.workspace_id)
    .where('document_id', '=', document.id)
    .where('revoked_at', 'is', null);
  if (linkId) query = query.where('id', '=', linkId);
  else query = query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  const rows = await query.returningAll().execute();
  for (const link of rows) {
    const data: Schemas['LinkRevokedData'] = { ...eventContext(link, document, platform.config.publicUrl, now), reason };
    await emitEvent(tx, { workspaceId: document.workspace_id, api: 'connect', type: 'link.revoked', data, at: now });
  }
  return rows;
}

/** `document.updated`: `version` became the current one, replacing `previous`. */
export async function emitDocumentUpdated(tx: Tx, document: DocumentRow, version: VersionRow, previous: number, now: Date): Promise<void> {
  const data: Schemas['DocumentUpdatedData'] = {
    document: { id: document.id, title: document.title, page_count: document.page_count },
    version: {
      version: version.version,
      filename: version.filename,
      content_type: version.content_type,
      size_bytes: Number(version.size_bytes),
      page_count: version.page_count,
      created_at: version.created_at.toISOString(),
    },
    previous_version: previous,
  };
  await emitEvent(tx, { workspaceId: document.workspace_id, api: 'connect', type: 'document.updated', data, at: now });
}

/** `link.opened` (a new session) or `session.updated` (progress, or the end), as of `now`. */
export async function emitSessionEvent(tx: Tx, platform: Platform, type: 'link.opened' | 'session.updated', session: SessionRow, now: Date): Promise<void> {
  const link = await tx.selectFrom('links').selectAll().where('id', '=', session.link_id).executeTakeFirstOrThrow();
  const document = await tx.selectFrom('documents').select(['id', 'title', 'page_count']).where('id', '=', session.document_id).executeTakeFirstOrThrow();
  const pages: PageRow[] = await tx.selectFrom('reader_page_stats').selectAll().where('session_id', '=', session.id).execute();
  const data: Schemas['LinkOpenedData'] | Schemas['SessionUpdatedData'] = {
    ...eventContext(link, document, platform.config.publicUrl, now),
    session: eventSession(session, pages),
  };
  await emitEvent(tx, { workspaceId: session.workspace_id, api: 'connect', type, data, at: now });
}
