// Messaging media: uploads and their storage, downloads of inbound media and their cache.
import type { Area } from '#server/apis/area.js';
import { mediaHandlers } from './handlers.js';
import { setupInboundMediaCache } from './download.js';
import { captureMediaParts } from './parts.js';

export const mediaArea: Area = {
  name: 'messaging/media',
  handlers: { messaging: mediaHandlers },
  routes: { uploadMedia: { preParsing: captureMediaParts } },
  plugin: setupInboundMediaCache,
};
