// Connect content: documents, share links, the public viewer and its analytics.
import type { Area } from '#server/apis/area.js';
import { contentHandlers } from './handlers.js';
import { setup } from './setup.js';

export const connectContentArea: Area = { name: 'connect/content', handlers: { connect: contentHandlers }, plugin: setup };
