// Messaging configuration: connections, numbers, provider webhooks, sync, marketing messages.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createConnection, deleteConnection, listConnections } from './connections.js';
import { getMarketingMessagesSettings, syncMarketingMessagesStatus, updateMarketingMessagesSettings } from './marketing-handlers.js';
import { getMessagingSettings, updateMessagingSettings } from './messaging-settings.js';
import { listAccountPhoneNumbers, listPhoneNumbers } from './numbers.js';
import { setupProviderWebhooks, syncWorkspace } from './provider-setup.js';

export const configurationHandlers: Handlers<operations> = {
  listConnections,
  createConnection,
  deleteConnection,
  listPhoneNumbers,
  listAccountPhoneNumbers,
  setupProviderWebhooks,
  syncWorkspace,
  getMarketingMessagesSettings,
  updateMarketingMessagesSettings,
  syncMarketingMessagesStatus,
  getMessagingSettings,
  updateMessagingSettings,
};
