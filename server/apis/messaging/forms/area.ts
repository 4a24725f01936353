// Messaging forms: forms and their published pages.
import type { Area } from '#server/apis/area.js';
import { formHandlers } from './handlers.js';
import { setup } from './setup.js';

export const formsArea: Area = { name: 'messaging/forms', handlers: { messaging: formHandlers }, plugin: setup };
