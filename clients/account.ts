// The typed client of the Account API: openapi-fetch over the generated `paths`.
import type { Client } from 'openapi-fetch';
import type { components, paths } from '../generated/account/types.js';
import { createApiClient, type ClientOptions } from './core.js';

export type AccountClient = Client<paths>;
export type AccountSchemas = components['schemas'];

export function createAccountClient(options: ClientOptions): AccountClient {
  return createApiClient<paths>(options);
}
