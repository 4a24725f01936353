// Messaging configuration: provider connections, business accounts, numbers, profiles; the
// numbers settings page.
import type { Area } from '#server/apis/area.js';
import { configurationHandlers } from './handlers.js';
import numbersPage from './numbers-page.js';

export const configurationArea: Area = {
  name: 'messaging/configuration',
  handlers: { messaging: configurationHandlers },
  plugin: async (app) => void (await app.register(numbersPage)),
};
