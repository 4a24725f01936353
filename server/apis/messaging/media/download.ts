// GET /api/chatapp/messages/{messageId}/media: the file of an inbound medium. Steps: the message
// of this workspace with an inbound medium (404 otherwise, another workspace's included), the
// cache, else the provider through the number's adapter (the Cloud API by media id with the
// account's token, the sandbox the bytes its phone sent), written to the cache as it arrives and
// counted against the limit (413); then the file, streamed with its type.
import type { FastifyInstance } from 'fastify';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { sendStored } from '#server/lib/storage/send.js';
import { ProviderError } from '#server/providers/types.js';
import { resolveSender } from '../sender.js';
import { type CachedMedia, MediaCache } from './inbound-cache.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Inbound media fetched from the provider (media-cache/ in the platform's storage). */
    inboundMediaCache: MediaCache;
  }
}

export function setupInboundMediaCache(app: FastifyInstance): void {
  const { cacheBytes, cacheTtlSeconds } = app.config.inboundMedia;
  app.decorate(
    'inboundMediaCache',
    new MediaCache({
      storage: app.platform.storage,
      maxTotalBytes: cacheBytes,
      ttlMs: cacheTtlSeconds * 1000,
      now: () => app.platform.now().getTime(),
    }),
  );
}

async function inboundMedium(platform: Platform, workspaceId: string, messageId: string) {
  const row = await platform.store.db
    .selectFrom('messages')
    .select(['id', 'content', 'phone_number_id'])
    .where('id', '=', messageId)
    .where('workspace_id', '=', workspaceId)
    .where('direction', '=', 'inbound')
    .executeTakeFirst();
  const media = (row?.content as { media?: { provider_media_id?: unknown; filename?: unknown } } | undefined)?.media;
  if (!row || typeof media?.provider_media_id !== 'string') {
    throw new HttpProblem(404, 'not-found', `No message ${messageId} with inbound media in this workspace.`);
  }
  return { row, mediaId: media.provider_media_id, filename: typeof media.filename === 'string' ? media.filename : null };
}

/** The provider's failure as this operation declares it: 504 when it did not answer, else 502. */
function downloadFailure(error: unknown): unknown {
  if (!(error instanceof ProviderError)) return error;
  if (error.kind === 'timeout') return error.toProblem();
  return new HttpProblem(502, 'provider-error', 'The chat provider could not deliver the file.', error.code !== null ? { provider_code: error.code } : {});
}

async function fetchToCache(
  platform: Platform,
  cache: MediaCache,
  key: string,
  workspaceId: string,
  phoneNumberId: string,
  mediaId: string,
): Promise<CachedMedia> {
  const max = platform.config.inboundMedia.maxBytes;
  let sender: Awaited<ReturnType<typeof resolveSender>>;
  try {
    sender = await resolveSender(platform, workspaceId, phoneNumberId);
  } catch {
    throw new HttpProblem(502, 'provider-error', 'The number this message came to is no longer connected; the file cannot be fetched.');
  }
  try {
    const download = await sender.provider.downloadMedia(sender.providerNumber, mediaId, max);
    return await cache.put(key, download.mimeType, download.body, max);
  } catch (error) {
    throw downloadFailure(error);
  }
}

export const getMessageMedia: Handler<operations['getMessageMedia']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { platform, inboundMediaCache: cache } = request.server;
  const { row, mediaId, filename } = await inboundMedium(platform, workspaceId, request.params.messageId);
  const key = `${workspaceId}/${row.id}`;
  const file = (await cache.get(key)) ?? (await fetchToCache(platform, cache, key, workspaceId, row.phone_number_id, mediaId));
  const headers = {
    'content-type': file.mimeType,
    'cache-control': 'private, max-age=3600',
    'x-content-type-options': 'nosniff',
    // Never rendered in our origin: a customer's HTML or SVG is a download, not a page.
    'content-disposition': `attachment${filename ? `; filename*=UTF-8''${encodeURIComponent(filename)}` : ''}`,
  };
  if (await sendStored(request, reply, cache.storage, file.key, headers, file.size)) return reply as never;
  // Pruned (or removed by another instance) between the look-up and the read: fetch it again.
  const again = await fetchToCache(platform, cache, key, workspaceId, row.phone_number_id, mediaId);
  if (await sendStored(request, reply, cache.storage, again.key, headers, again.size)) return reply as never;
  throw new HttpProblem(503, 'unavailable', 'The file could not be read back from storage; try again.', {}, { 'retry-after': '1' });
};
