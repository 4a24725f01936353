// Messaging industry packs: the catalogue, previews and applying one to a workspace.
import type { Area } from '#server/apis/area.js';
import { packHandlers } from './handlers.js';

export const packsArea: Area = { name: 'messaging/packs', handlers: { messaging: packHandlers } };
