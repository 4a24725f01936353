// Messaging configuration: connections, numbers, provider webhooks, sync, marketing messages.
import type { operations } from '../../../../generated/messaging/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const configurationHandlers: Handlers<operations> = {};
