// Messaging operations: usage, agents, Google connection, kanban funnels; the usage settings page.
import type { Area } from '#server/apis/area.js';
import { operationsHandlers } from './handlers.js';
import { setup } from './setup.js';
import usagePage from './usage-page.js';

export const operationsArea: Area = {
  name: 'messaging/operations',
  handlers: { messaging: operationsHandlers },
  async plugin(app) {
    await setup(app);
    await app.register(usagePage);
  },
};
