// Messaging media: uploads and their storage.
import type { Area } from '#server/apis/area.js';
import { mediaHandlers } from './handlers.js';
import { captureMediaParts } from './parts.js';

export const mediaArea: Area = { name: 'messaging/media', handlers: { messaging: mediaHandlers }, routes: { uploadMedia: { preParsing: captureMediaParts } } };
