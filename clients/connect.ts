// The typed client of the Connect API: openapi-fetch over the generated `paths`.
import type { Client } from 'openapi-fetch';
import type { components, paths } from '../generated/connect/types.js';
import { createApiClient, type ClientOptions } from './core.js';

export type ConnectClient = Client<paths>;
export type ConnectSchemas = components['schemas'];

export function createConnectClient(options: ClientOptions): ConnectClient {
  return createApiClient<paths>(options);
}
