// Messaging API handlers, keyed by operationId and typed from generated/messaging/types.ts, one
// module per area. Operations without a handler answer 501 not-implemented (server/apis/registry.ts).
import type { operations } from '../../../generated/messaging/types.js';
import type { Handlers } from '../../lib/handler-types.js';
import { messagingWebhookHandlers } from '../webhooks/messaging-handlers.js';
import { botHandlers } from './bots/handlers.js';
import { formHandlers } from './forms/handlers.js';
import { campaignHandlers } from './campaigns/handlers.js';
import { automationHandlers } from './automation/handlers.js';
import { commerceHandlers } from './commerce/handlers.js';
import { configurationHandlers } from './configuration/handlers.js';
import { contactHandlers } from './contacts/handlers.js';
import { inboxHandlers } from './inbox/handlers.js';
import { receiveProviderWebhook, verifyProviderWebhook } from './provider-webhook.js';
import { templateHandlers } from './templates/handlers.js';
import { mediaHandlers } from './media/handlers.js';
import { packHandlers } from './packs/handlers.js';
import { operationsHandlers } from './operations/handlers.js';

export const messagingHandlers: Handlers<operations> = {
  verifyProviderWebhook,
  receiveProviderWebhook,
  ...configurationHandlers,
  ...contactHandlers,
  ...inboxHandlers,
  ...templateHandlers,
  ...campaignHandlers,
  ...automationHandlers,
  ...mediaHandlers,
  ...commerceHandlers,
  ...botHandlers,
  ...formHandlers,
  ...packHandlers,
  ...operationsHandlers,
  ...messagingWebhookHandlers,
};
