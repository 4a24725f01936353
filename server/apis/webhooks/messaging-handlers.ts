// Messaging webhook endpoints.
import type { operations } from '../../../generated/messaging/types.js';
import type { Handlers } from '../../lib/handler-types.js';

export const messagingWebhookHandlers: Handlers<operations> = {};
