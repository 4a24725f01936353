// Messaging inbox: sending, chats and messages (kept by the send path and the provider webhook).
import type { Area } from '#server/apis/area.js';
import { captureMediaParts } from '#server/apis/messaging/media/parts.js';
import { inboxHandlers } from './handlers.js';

export const inboxArea: Area = {
  name: 'messaging/inbox',
  handlers: { messaging: inboxHandlers },
  // A send may carry its media as a multipart file.
  routes: { sendMessage: { preParsing: captureMediaParts } },
};
