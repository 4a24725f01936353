// Messaging commerce: catalogues, products and order webhooks.
import type { Area } from '#server/apis/area.js';
import { commerceHandlers } from './handlers.js';

export const commerceArea: Area = { name: 'messaging/commerce', handlers: { messaging: commerceHandlers } };
