// Uploaded media ids (`med_…`) given as template header values, resolved to the provider's media
// ids for one sender number. Meta serves a media id only to the number it was uploaded for, and
// only for 30 days: another number's or an expired upload is refused 422 naming the field, before
// anything is stored or sent. An unknown id and another workspace's answer the same 404.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { MEDIA_LIMITS, type MediaKind } from './media.js';

type S = components['schemas'];

/** Our upload id → the provider's media id. */
export type UploadedMediaIds = Map<string, string>;

/** A `media_id` given for a header of `kind`, and where. */
export interface UploadRef {
  id: string;
  kind: MediaKind;
  pointer: string;
}

type MediaHeader = { type?: string; media_id?: string };

/** The `media_id`s of send values (header and media carousel cards), with their JSON pointers. */
export function uploadRefs(values: S['TemplateSendParameters'], base = '/body/template'): UploadRef[] {
  const refs: UploadRef[] = [];
  const header = values.header as MediaHeader | undefined;
  if (header?.media_id) refs.push({ id: header.media_id, kind: header.type as MediaKind, pointer: `${base}/header/media_id` });
  const carousel = values.carousel as { type?: string; cards?: { header?: MediaHeader }[] } | undefined;
  if (carousel?.type === 'media') {
    carousel.cards?.forEach((card, i) => {
      if (card.header?.media_id)
        refs.push({ id: card.header.media_id, kind: card.header.type as MediaKind, pointer: `${base}/carousel/cards/${i}/header/media_id` });
    });
  }
  return refs;
}

export async function resolveUploadedMedia(platform: Platform, workspaceId: string, phoneNumberId: string, refs: UploadRef[]): Promise<UploadedMediaIds> {
  const out: UploadedMediaIds = new Map();
  if (!refs.length) return out;
  const rows = await platform.store.db
    .selectFrom('uploaded_media')
    .select(['id', 'provider_media_id', 'phone_number_id', 'expires_at', 'mime_type'])
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...new Set(refs.map((r) => r.id))])
    .execute();
  const found = new Map(rows.map((r) => [r.id, r]));
  const now = platform.now().getTime();
  for (const { id, kind, pointer } of refs) {
    const row = found.get(id);
    if (!row)
      throw new HttpProblem(404, 'not-found', `No uploaded media ${id} in this workspace.`, {
        errors: [{ pointer, detail: `media_id ${id} is not an upload of this workspace` }],
      });
    if (row.phone_number_id && row.phone_number_id !== phoneNumberId) {
      throw new HttpProblem(
        422,
        'unprocessable',
        `Uploaded media ${id} was uploaded for another number; the provider serves it only to that number. Upload the file for this sender.`,
        {
          errors: [{ pointer, detail: 'uploaded for another sender number' }],
        },
      );
    }
    if (row.expires_at && new Date(row.expires_at).getTime() <= now) {
      throw new HttpProblem(
        422,
        'unprocessable',
        `Uploaded media ${id} expired at ${new Date(row.expires_at).toISOString()} (the provider keeps uploads 30 days); upload it again.`,
        {
          errors: [{ pointer, detail: 'expired' }],
        },
      );
    }
    // The provider would accept the send and fail the message later: refuse a file of the wrong kind now.
    const allowed = MEDIA_LIMITS[kind]?.content_types ?? [];
    if (!allowed.includes(row.mime_type)) {
      throw new HttpProblem(
        422,
        'unprocessable',
        `Uploaded media ${id} is ${row.mime_type}, which a ${kind} header cannot carry (allowed: ${allowed.join(', ')}).`,
        {
          errors: [{ pointer, detail: `${row.mime_type} is not a ${kind} header type` }],
        },
      );
    }
    out.set(id, row.provider_media_id);
  }
  return out;
}
