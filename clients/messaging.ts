// The typed client of the Messaging API: openapi-fetch over the generated `paths`.
import type { Client } from 'openapi-fetch';
import type { components, paths } from '../generated/messaging/types.js';
import { createApiClient, type ClientOptions } from './core.js';

export type MessagingClient = Client<paths>;
export type MessagingSchemas = components['schemas'];

export function createMessagingClient(options: ClientOptions): MessagingClient {
  return createApiClient<paths>(options);
}
