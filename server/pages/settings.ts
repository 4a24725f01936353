// The owner's settings pages, on the layout of ./settings-layout.ts. Login apps are registered
// by server/plugins/pages.ts and Connect clients by the Connect area; both use the same layout.
import type { FastifyInstance } from 'fastify';
import overview from './settings-overview.js';
import apiKeys from './settings-api-keys.js';
import webhooks from './settings-webhooks.js';
import numbers from './settings-numbers.js';
import usage from './settings-usage.js';

export default async function settingsPages(app: FastifyInstance): Promise<void> {
  for (const pages of [overview, apiKeys, webhooks, numbers, usage]) await app.register(pages);
}
