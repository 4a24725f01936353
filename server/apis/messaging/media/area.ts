// Messaging media: uploads and their storage.
import type { Area } from '#server/apis/area.js';
import { mediaHandlers } from './handlers.js';
import { setup } from './setup.js';

export const mediaArea: Area = { name: 'messaging/media', handlers: { messaging: mediaHandlers }, plugin: setup };
