// Document operations: upload (type by content, size and zip-bomb caps, generated storage name),
// list, get, delete (files removed, active links revoked with `link.revoked`), and versions: a
// new file for the same document (`document.updated`), every link keeping its URL.
import { createHash } from 'node:crypto';
import type { FastifyRequest, preParsingAsyncHookHandler } from 'fastify';
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { MAX_UPLOAD_BYTES } from '#server/plugins/body-parsers.js';
import type { Platform } from '#server/platform.js';
import { detectType, inspectOffice, pdfPageCount, type DocumentType } from './detect.js';
import { emitDocumentUpdated, revokeLinks } from './events.js';
import { cleanTitle, sanitiseFilename, titleFromFilename } from './filenames.js';
import { removeFile, storeFile } from './storage.js';
import { uploadedParts } from './upload-parts.js';
import { documentView, versionView, type DocumentRow } from './views.js';

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

/** A document has at most this many versions: more is a plan limit. */
export const MAX_VERSIONS = 100;

interface CheckedFile {
  bytes: Buffer;
  type: DocumentType;
  pageCount: number | null;
  filename: string;
  title?: string;
}

/** The file (and title, where `parts` allows it) of a multipart upload, checked and inspected. */
async function checkedUpload(request: FastifyRequest, parts: string[]): Promise<CheckedFile> {
  if (!request.isMultipart()) throw new HttpProblem(415, 'unsupported-media-type', 'Upload the document as multipart/form-data.');
  const body = (request.body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(body)) if (!parts.includes(key)) throw invalid(`/body/${key}`, 'is not a known part');
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
  return { bytes: file, type, pageCount, filename: sanitiseFilename(part.filename, type), title };
}

/** Stores the bytes under a generated name; a full disk is 507 with nothing stored. */
async function store(platform: Platform, bytes: Buffer): Promise<string> {
  return storeFile(platform.storage, bytes).catch((error: NodeJS.ErrnoException) => {
    // The disk (or the quota) of DATA_DIR is full: storeFile removed its partial file (bad-inputs F-6).
    if (error.code === 'ENOSPC' || error.code === 'EDQUOT') {
      throw new HttpProblem(507, 'insufficient-storage', 'There is no room left to store the file; nothing was stored. Try again later.');
    }
    throw error;
  });
}

/** The file fields a document row and its version row share. */
function fileFields(upload: CheckedFile, storageKey: string) {
  return {
    filename: upload.filename,
    content_type: upload.type,
    size_bytes: upload.bytes.length,
    page_count: upload.pageCount,
    sha256: createHash('sha256').update(upload.bytes).digest('hex'),
    storage_key: storageKey,
  };
}

export const uploadDocument: Handler<operations['uploadDocument']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const upload = await checkedUpload(request as FastifyRequest, ['file', 'title']);
  const now = platform.now();
  const storageKey = await store(platform, upload.bytes);
  const row: DocumentRow = {
    id: newId('doc'),
    workspace_id: workspaceId,
    title: upload.title ?? titleFromFilename(upload.filename),
    ...fileFields(upload, storageKey),
    created_at: now, // from JS, millisecond precision, as list cursors expect
    deleted_at: null,
    version: 1,
  };
  try {
    await platform.store.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('documents')
        .values({ ...row, size_bytes: upload.bytes.length })
        .execute();
      await tx
        .insertInto('document_versions')
        .values({ document_id: row.id, workspace_id: workspaceId, version: 1, ...fileFields(upload, storageKey), created_at: now })
        .execute();
    });
  } catch (error) {
    await removeFile(platform.storage, storageKey).catch(() => {});
    throw error;
  }
  reply.code(201);
  return documentView(row);
};

const RESOURCE_ID = /^[a-z]{2,6}_[0-9A-Za-z]{8,48}$/;

/**
 * The `preParsing` hook of a new version: the document must be the caller's before a byte of the
 * file is read, so another workspace's id (or a malformed one) is the same 404 whatever the body.
 */
export const documentBeforeBody: preParsingAsyncHookHandler = async (request) => {
  const { documentId } = request.params as { documentId: string };
  if (!RESOURCE_ID.test(documentId)) throw documentNotFound();
  await findDocument(request.server.platform, authOf(request).workspaceId, documentId);
};

export const uploadDocumentVersion: Handler<operations['uploadDocumentVersion']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const upload = await checkedUpload(request as FastifyRequest, ['file']);
  const storageKey = await store(platform, upload.bytes);
  const now = platform.now();
  try {
    const version = await platform.store.db.transaction().execute(async (tx) => {
      // The lock orders concurrent versions of one document and a racing delete.
      const current = await tx
        .selectFrom('documents')
        .selectAll()
        .where('id', '=', request.params.documentId)
        .where('workspace_id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .forUpdate()
        .executeTakeFirst();
      if (!current) throw documentNotFound();
      if (current.version >= MAX_VERSIONS) {
        throw new HttpProblem(402, 'plan-limit', `A document has at most ${MAX_VERSIONS} versions; upload it as a new document.`);
      }
      const fields = fileFields(upload, storageKey);
      const row = await tx
        .insertInto('document_versions')
        .values({ document_id: current.id, workspace_id: workspaceId, version: current.version + 1, ...fields, created_at: now })
        .returningAll()
        .executeTakeFirstOrThrow();
      const document = await tx
        .updateTable('documents')
        .set({ ...fields, version: row.version })
        .where('id', '=', current.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await emitDocumentUpdated(tx, document, row, current.version, now);
      return row;
    });
    reply.code(201);
    return versionView(version, version.version);
  } catch (error) {
    await removeFile(platform.storage, storageKey).catch(() => {});
    throw error;
  }
};

export const listDocumentVersions: Handler<operations['listDocumentVersions']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const document = await findDocument(platform, workspaceId, request.params.documentId);
  const rows = await platform.store.db
    .selectFrom('document_versions')
    .selectAll()
    .where('document_id', '=', document.id)
    .where('workspace_id', '=', workspaceId)
    .orderBy('version', 'desc')
    .execute();
  return { data: rows.map((row) => versionView(row, document.version)) };
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
  // After the commit: a rolled-back delete must still have its files (every version's).
  const versions = await platform.store.db.selectFrom('document_versions').select('storage_key').where('document_id', '=', document.id).execute();
  for (const key of new Set([document.storage_key, ...versions.map((v) => v.storage_key)])) {
    await removeFile(platform.storage, key).catch((error) => request.log.warn({ err: error, document: document.id }, 'document file not removed'));
  }
  return reply.code(204).send();
};
