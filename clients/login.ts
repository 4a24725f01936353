// The typed client of the Login API: openapi-fetch over the generated `paths`.
import type { Client } from 'openapi-fetch';
import type { components, paths } from '../generated/login/types.js';
import { createApiClient, type ClientOptions } from './core.js';

export type LoginClient = Client<paths>;
export type LoginSchemas = components['schemas'];

export function createLoginClient(options: ClientOptions): LoginClient {
  return createApiClient<paths>(options);
}
