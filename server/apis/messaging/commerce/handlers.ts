// Commerce operations: catalogs mirrored from the provider, and storefront order webhooks.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { catalogHandlers } from './catalogs.js';
import { receiveOrderWebhook } from './order-receive.js';
import { orderWebhookHandlers } from './order-webhooks.js';

export const commerceHandlers: Handlers<operations> = {
  ...catalogHandlers,
  ...orderWebhookHandlers,
  receiveOrderWebhook,
};
