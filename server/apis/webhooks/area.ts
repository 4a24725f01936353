// Webhook endpoints of Connect and Messaging, the outbox that delivers their events, and the
// webhooks settings page.
import type { FastifyInstance } from 'fastify';
import type { Area } from '../area.js';
import { connectWebhookHandlers } from './connect-handlers.js';
import { messagingWebhookHandlers } from './messaging-handlers.js';
import settingsPage from './settings-page.js';
import { setup } from './setup.js';

export const webhooksArea: Area = {
  name: 'webhooks',
  handlers: { connect: connectWebhookHandlers, messaging: messagingWebhookHandlers },
  async plugin(app: FastifyInstance) {
    await setup(app);
    await app.register(settingsPage);
  },
};
