// Account API handlers, keyed by operationId and typed from generated/account/types.ts.
// Operations without a handler answer 501 not-implemented (see server/apis/registry.ts).
import type { operations } from '#generated/account/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './api-keys.js';
import { createSession } from './sessions.js';
import { createWorkspace, getAccount } from './workspaces.js';

export const accountHandlers: Handlers<operations> = {
  createWorkspace,
  createSession,
  getAccount,
  createApiKey,
  listApiKeys,
  getApiKey,
  rotateApiKey,
  revokeApiKey,
};
