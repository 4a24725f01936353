// Document operations: upload (type by content, size and zip-bomb caps, generated storage name),
// list, get, delete (file removed, active links revoked with `link.revoked`).
import { createHash } from 'node:crypto';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { MAX_UPLOAD_BYTES } from '#server/plugins/body-parsers.js';
import type { Platform } from '#server/platform.js';
import { detectType, inspectOffice, pdfPageCount, type DocumentType } from './detect.js';
import { revokeLinks } from './events.js';
import { cleanTitle, sanitiseFilename, titleFromFilename } from './filenames.js';
import { removeFile, storeFile } from './storage.js';
import { uploadedParts } from './upload-parts.js';
import { documentView, type DocumentRow } from './views.js';

type ListQuery = NonNullable<operations['listDocuments']['parameters']['query']>;

const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', 'One field is invalid.', { errors: [{ pointer, detail }] });
export const documentNotFound = () => new HttpProblem(404, 'not-found', 'No document with this id.');

/** A live (not deleted) document of the workspace, or 404. */
export async function findDocument(platform: Platform, workspaceId: string, documentId: string): Promise<DocumentRow> {
  const row = await platform.store.db
    .selectFrom('documents')
    .selectAll()
    .where('id', '=', documentId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw documentNotFound();
  return row;
}

async function pageCountOf(bytes: Buffer, type: DocumentType): Promise<number | null> {
  if (type === 'application/pdf') return pdfPageCount(bytes);
  if (type.startsWith('image/')) return 1;
  return inspectOffice(bytes, type); // refuses zip bombs (422); slides of a PPTX, else null
}

export const uploadDocument: Handler<operations['uploadDocument']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  if (!request.isMultipart()) throw new HttpProblem(415, 'unsupported-media-type', 'Upload the document as multipart/form-data.');
  const body = (request.body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(body)) if (key !== 'file' && key !== 'title') throw invalid(`/body/${key}`, 'is not a known part');
  const file = body.file;
  const part = uploadedParts(request).find((p) => p.fieldname === 'file');
  if (!Buffer.isBuffer(file) || !part) throw invalid('/body/file', 'must be a file part (with a filename)');
  if (file.length === 0) throw invalid('/body/file', 'is empty');
  if (file.length > MAX_UPLOAD_BYTES) throw new HttpProblem(413, 'payload-too-large', `The file exceeds the upload limit of ${MAX_UPLOAD_BYTES} bytes.`);
  let title: string | undefined;
  if (body.title !== undefined) {
    title = typeof body.title === 'string' ? cleanTitle(body.title) : '';
    if (!title || title.length > 200) throw invalid('/body/title', 'must be 1-200 visible characters');
  }

  const type = await detectType(file, part.mimetype);
  const pageCount = await pageCountOf(file, type);
  const filename = sanitiseFilename(part.filename, type);
  const now = platform.now();
  const row: DocumentRow = {
    id: newId('doc'),
    workspace_id: workspaceId,
    title: title ?? titleFromFilename(filename),
    filename,
    content_type: type,
    size_bytes: file.length,
    page_count: pageCount,
    sha256: createHash('sha256').update(file).digest('hex'),
    storage_key: '',
    created_at: now, // from JS, millisecond precision, as list cursors expect
    deleted_at: null,
  };
  row.storage_key = await storeFile(platform.config.dataDir, file).catch((error: NodeJS.ErrnoException) => {
    // The disk (or the quota) of DATA_DIR is full: storeFile removed its partial file (bad-inputs F-6).
    if (error.code === 'ENOSPC' || error.code === 'EDQUOT') {
      throw new HttpProblem(507, 'insufficient-storage', 'There is no room left to store the file; nothing was stored. Try again later.');
    }
    throw error;
  });
  try {
    await platform.store.db
      .insertInto('documents')
      .values({ ...row, size_bytes: file.length })
      .execute();
  } catch (error) {
    await removeFile(platform.config.dataDir, row.storage_key).catch(() => {});
    throw error;
  }
  reply.code(201);
  return documentView(row);
};

export const listDocuments: Handler<operations['listDocuments']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  const scope = { workspaceId, operation: 'listDocuments' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = platform.store.db.selectFrom('documents').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, documentView);
};

export const getDocument: Handler<operations['getDocument']> = async (request) => {
  const { workspaceId } = authOf(request);
  return documentView(await findDocument(request.server.platform, workspaceId, request.params.documentId));
};

export const deleteDocument: Handler<operations['deleteDocument']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const document = await platform.store.db.transaction().execute(async (tx) => {
    const row = await tx
      .updateTable('documents')
      .set({ deleted_at: now })
      .where('id', '=', request.params.documentId)
      .where('workspace_id', '=', workspaceId)
      .where('deleted_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw documentNotFound();
    await revokeLinks(tx, platform, row, null, 'document_deleted', now);
    return row;
  });
  // After the commit: a rolled-back delete must still have its file.
  await removeFile(platform.config.dataDir, document.storage_key).catch((error) =>
    request.log.warn({ err: error, document: document.id }, 'document file not removed'),
  );
  return reply.code(204).send();
};
