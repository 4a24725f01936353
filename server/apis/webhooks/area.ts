// Webhook endpoints of Connect and Messaging, and the outbox that delivers their events.
import type { Area } from '../area.js';
import { connectWebhookHandlers } from './connect-handlers.js';
import { messagingWebhookHandlers } from './messaging-handlers.js';
import { setup } from './setup.js';

export const webhooksArea: Area = { name: 'webhooks', handlers: { connect: connectWebhookHandlers, messaging: messagingWebhookHandlers }, plugin: setup };
