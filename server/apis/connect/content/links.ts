// Link operations: one link per recipient of a document, each with an unguessable viewer URL.
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { base62, newId } from '#server/lib/ids.js';
import { requireE164 } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { findDocument } from './documents.js';
import { revokeLinks } from './events.js';
import { linkView, type LinkRow } from './views.js';

type ListQuery = NonNullable<operations['listLinks']['parameters']['query']>;

/** 22 base62 characters: 130 bits from the CSPRNG. */
export const SLUG_LENGTH = 22;

export const linkNotFound = () => new HttpProblem(404, 'not-found', 'No link with this id.');

export async function findLink(platform: Platform, workspaceId: string, linkId: string): Promise<LinkRow> {
  const row = await platform.store.db.selectFrom('links').selectAll().where('id', '=', linkId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw linkNotFound();
  return row;
}

export const createLink: Handler<operations['createLink']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const body = request.body;
  const now = platform.now();
  const phone = body.recipient.phone === undefined ? null : requireE164(body.recipient.phone, '/body/recipient/phone');
  const email = body.recipient.email?.trim() || null;
  if (!phone && !email) {
    throw new HttpProblem(400, 'validation', 'One field is invalid.', { errors: [{ pointer: '/body/recipient', detail: 'needs a phone, an email or both' }] });
  }
  const requirePhone = body.require_phone_verification ?? false;
  if (requirePhone && !phone) {
    throw new HttpProblem(400, 'validation', 'One field is invalid.', {
      errors: [{ pointer: '/body/require_phone_verification', detail: 'needs recipient.phone: the number the reader must verify' }],
    });
  }
  const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  if (expiresAt && expiresAt.getTime() <= now.getTime()) {
    throw new HttpProblem(400, 'validation', 'One field is invalid.', { errors: [{ pointer: '/body/expires_at', detail: 'must be in the future' }] });
  }
  const row = await platform.store.db.transaction().execute(async (tx) => {
    // Locking the document serialises creates for it: "one active link per external_id" holds
    // under concurrency, and a delete racing this create either comes first (404) or after.
    const document = await tx
      .selectFrom('documents')
      .select('id')
      .where('id', '=', body.document_id)
      .where('workspace_id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!document) throw new HttpProblem(404, 'not-found', 'No document with this id.');
    if (body.version !== undefined) {
      const pinned = await tx
        .selectFrom('document_versions')
        .select('version')
        .where('document_id', '=', document.id)
        .where('version', '=', body.version)
        .executeTakeFirst();
      if (!pinned) {
        throw new HttpProblem(400, 'validation', 'One field is invalid.', {
          errors: [{ pointer: '/body/version', detail: 'is not a version of this document' }],
        });
      }
    }
    const existing = await tx
      .selectFrom('links')
      .select('id')
      .where('document_id', '=', document.id)
      .where('external_id', '=', body.external_id)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .executeTakeFirst();
    if (existing) throw new HttpProblem(409, 'conflict', `Link ${existing.id} is already active for this document and external_id.`);
    const values = {
      id: newId('lnk'),
      workspace_id: workspaceId,
      document_id: document.id,
      external_id: body.external_id,
      recipient_phone: phone,
      recipient_email: email,
      slug: base62(SLUG_LENGTH),
      allow_download: body.allow_download ?? false,
      require_phone_verification: requirePhone,
      expires_at: expiresAt,
      version: body.version ?? null,
      created_at: now,
    };
    return tx.insertInto('links').values(values).returningAll().executeTakeFirstOrThrow();
  });
  reply.code(201);
  return linkView(row, platform.config.publicUrl, now);
};

export const listLinks: Handler<operations['listLinks']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const { document_id, external_id, status, limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  const scope = { workspaceId, operation: 'listLinks' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  if (document_id !== undefined) await findDocument(platform, workspaceId, document_id);
  let query = platform.store.db.selectFrom('links').selectAll().where('workspace_id', '=', workspaceId);
  if (document_id !== undefined) query = query.where('document_id', '=', document_id);
  if (external_id !== undefined) query = query.where('external_id', '=', external_id);
  if (status === 'revoked') query = query.where('revoked_at', 'is not', null);
  if (status === 'expired') query = query.where('revoked_at', 'is', null).where('expires_at', '<=', now);
  if (status === 'active') query = query.where('revoked_at', 'is', null).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, (row) => linkView(row, platform.config.publicUrl, now));
};

export const getLink: Handler<operations['getLink']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  return linkView(await findLink(platform, workspaceId, request.params.linkId), platform.config.publicUrl, platform.now());
};

export const revokeLink: Handler<operations['revokeLink']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const link = await platform.store.db.transaction().execute(async (tx) => {
    const current = await tx
      .selectFrom('links')
      .selectAll()
      .where('id', '=', request.params.linkId)
      .where('workspace_id', '=', workspaceId)
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw linkNotFound();
    if (current.revoked_at) return current; // revoking twice changes nothing and sends nothing
    const document = await tx.selectFrom('documents').selectAll().where('id', '=', current.document_id).executeTakeFirstOrThrow();
    const [revoked] = await revokeLinks(tx, platform, document, current.id, 'revoked', now);
    return revoked ?? current;
  });
  return linkView(link, platform.config.publicUrl, now);
};
