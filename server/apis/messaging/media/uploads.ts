// A file from the device, from the parsed multipart body to the provider: the one file part
// (400 otherwise), its bytes checked (rules.ts), uploaded for the sender number, and recorded in
// uploaded_media so its `med_…` id can be used for 30 days (Meta keeps uploaded media that long).
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Selectable } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { ProviderError } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import type { Sender } from '../sender.js';
import { fileParts } from './parts.js';
import { checkMedia, displayName, type CheckedMedia, type MediaKind } from './rules.js';

/** Meta keeps uploaded media 30 days. */
export const MEDIA_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface DeviceFile extends CheckedMedia {
  bytes: Buffer;
  filename: string;
  sha256: string;
}

export type UploadRow = Selectable<Database['uploaded_media']>;

/** An upload that timed out: unlike a timed-out send nothing reached the customer, so a retry may upload again. */
export class UploadTimeoutProblem extends HttpProblem {}

const invalid = (pointer: string, detail: string) =>
  new HttpProblem(400, 'validation', `${pointer.slice('/body/'.length)} ${detail}.`, { errors: [{ pointer, detail }] });

/** The multipart body's fields as strings (the validator has checked them) and nothing unknown. */
export function formFields(request: FastifyRequest, allowed: string[]): Record<string, string> {
  if (!request.isMultipart()) throw new HttpProblem(415, 'unsupported-media-type', 'Send the file as multipart/form-data.');
  const body = (request.body ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'file') continue;
    if (!allowed.includes(key)) throw invalid(`/body/${key}`, 'is not a known part');
    if (typeof value !== 'string') throw invalid(`/body/${key}`, 'must be a text part');
    out[key] = value;
  }
  return out;
}

/** The one file part, checked for `kind` (a send) or for any kind (an upload). Nothing is stored or sent here. */
export async function deviceFile(request: FastifyRequest, kind?: MediaKind): Promise<DeviceFile> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  const parts = fileParts(request);
  const part = parts.find((p) => p.fieldname === 'file');
  if (parts.length > 1) throw invalid('/body/file', 'must be the only file part');
  if (!Buffer.isBuffer(body.file) || !part) throw invalid('/body/file', 'must be a file part (with a filename)');
  const checked = await checkMedia(body.file, part.mimetype, kind);
  return {
    ...checked,
    bytes: body.file,
    filename: displayName(part.filename, checked.mimeType, checked.kind),
    sha256: createHash('sha256').update(body.file).digest('hex'),
  };
}

/** Uploads to the provider for the sender's number, then records it. Provider refusals become our problems. */
export async function uploadAndRecord(platform: Platform, workspaceId: string, sender: Sender, file: DeviceFile): Promise<UploadRow> {
  let providerId: string;
  try {
    ({ id: providerId } = await sender.provider.uploadMedia(sender.providerNumber, { bytes: file.bytes, mimeType: file.mimeType, filename: file.filename }));
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    if (error.kind === 'timeout') {
      throw new UploadTimeoutProblem(504, 'provider-error', 'The chat provider did not answer the upload in time; nothing was recorded or sent. Try again.');
    }
    throw error.toProblem();
  }
  const now = platform.now();
  return platform.store.db
    .insertInto('uploaded_media')
    .values({
      id: newId('med'),
      workspace_id: workspaceId,
      phone_number_id: sender.number.id,
      provider_media_id: providerId,
      mime_type: file.mimeType,
      filename: file.filename,
      size_bytes: file.bytes.length,
      sha256: file.sha256,
      expires_at: new Date(now.getTime() + MEDIA_TTL_MS),
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
