// Start-up work of each API area beyond its contract routes: auth schemes, pages outside the
// contract, outbox destinations, bus subscribers and workers. Runs before the 405 routes.
import type { FastifyInstance } from 'fastify';
import { setup as connectOAuth } from './connect/oauth/setup.js';
import { setup as connectContent } from './connect/content/setup.js';
import { setup as webhooks } from './webhooks/setup.js';
import { setup as messagingConfiguration } from './messaging/configuration/setup.js';
import { setup as messagingInbox } from './messaging/inbox/setup.js';
import { setup as campaigns } from './messaging/campaigns/setup.js';
import { setup as automation } from './messaging/automation/setup.js';
import { setup as media } from './messaging/media/setup.js';
import { setup as bots } from './messaging/bots/setup.js';
import { setup as forms } from './messaging/forms/setup.js';
import { setup as packsOperations } from './messaging/operations/setup.js';
import { setupProviderInbox } from './messaging/provider-inbox.js';

export async function setupAreas(app: FastifyInstance): Promise<void> {
  for (const setup of [connectOAuth, connectContent, webhooks, messagingConfiguration, messagingInbox, campaigns, automation, media, bots, forms, packsOperations, setupProviderInbox]) await setup(app);
}
