// POST /api/chatapp/media: a file from the device uploaded ahead of time for a sender number, for
// template media headers and media carousel cards (`media_id`). Checks, in order: the form (400),
// the sender (404, another workspace's number is unknown), the bytes (415, 413); then one
// provider call, and only an accepted upload is recorded.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import { senderOf } from '../sender.js';
import { getMessageMedia } from './download.js';
import { deviceFile, formFields, uploadAndRecord, type UploadRow } from './uploads.js';

type S = components['schemas'];

export function uploadView(row: UploadRow, number: string): S['MediaUpload'] {
  const created = new Date(row.created_at);
  return {
    id: row.id,
    chatapp_phone_number: number,
    provider_media_id: row.provider_media_id,
    mime_type: row.mime_type,
    filename: row.filename ?? '',
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256 ?? '',
    expires_at: new Date(row.expires_at ?? created.getTime() + 30 * 24 * 3600 * 1000).toISOString(),
    created_at: created.toISOString(),
  };
}

export const uploadMedia: Handler<operations['uploadMedia']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const fields = formFields(request, ['chatapp_phone_number']);
  const sender = await senderOf(platform, workspaceId, fields.chatapp_phone_number!);
  const file = await deviceFile(request);
  const row = await uploadAndRecord(platform, workspaceId, sender, file);
  reply.code(201);
  return uploadView(row, sender.number.display_phone_number);
};

export const mediaHandlers: Handlers<operations> = { uploadMedia, getMessageMedia };
