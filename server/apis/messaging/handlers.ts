// Messaging API handlers, keyed by operationId and typed from generated/messaging/types.ts.
// Operations without a handler answer 501 not-implemented (see server/apis/registry.ts).
import type { operations } from '../../../generated/messaging/types.js';
import type { Handlers } from '../../lib/handler-types.js';
import { receiveProviderWebhook, verifyProviderWebhook } from './provider-webhook.js';

export const messagingHandlers: Handlers<operations> = {
  verifyProviderWebhook,
  receiveProviderWebhook,
};
