// Messaging commerce: catalogues, products and order webhooks.
import type { Area } from '../../area.js';
import { commerceHandlers } from './handlers.js';

export const commerceArea: Area = { name: 'messaging/commerce', handlers: { messaging: commerceHandlers } };
