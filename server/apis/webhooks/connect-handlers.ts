// Connect webhook endpoints, deliveries, redelivery, test events.
import type { operations } from '../../../generated/connect/types.js';
import type { Handlers } from '../../lib/handler-types.js';

export const connectWebhookHandlers: Handlers<operations> = {};
