// Login API handlers, keyed by operationId and typed from generated/login/types.ts.
// Operations without a handler answer 501 not-implemented (see server/apis/registry.ts).
import type { operations } from '#generated/login/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import {
  createLoginApp,
  deleteLoginApp,
  getLoginApp,
  listLoginAppWebhookReceipts,
  listLoginApps,
  retryLoginAppWebhookSetup,
  rotateLoginAppApiKey,
  rotateLoginAppWebhookSecret,
  updateLoginApp,
} from './apps.js';
import { registerLoginAuth } from './auth.js';
import { checkLoginCode, resendLoginCode } from './codes.js';
import { receiveHostedLoginWebhook } from './hosted-webhook.js';
import { streamLoginSessionEvents } from './events-stream.js';
import { getLoginSessionStatus, startLoginSession } from './sessions.js';
import { oidcHandlers } from './oidc/handlers.js';
import { getLoginJwks, verifyTokenHandler } from './tokens.js';

// Login-app keys must be known before registry.ts builds the routes' authenticators.
registerLoginAuth();

export const loginHandlers: Handlers<operations> = {
  createLoginApp,
  listLoginApps,
  getLoginApp,
  updateLoginApp,
  deleteLoginApp,
  rotateLoginAppApiKey,
  rotateLoginAppWebhookSecret,
  retryLoginAppWebhookSetup,
  listLoginAppWebhookReceipts,
  receiveHostedLoginWebhook,
  startLoginSession,
  getLoginSessionStatus,
  checkLoginCode,
  resendLoginCode,
  streamLoginSessionEvents,
  verifyToken: verifyTokenHandler,
  getLoginJwks,
  ...oidcHandlers,
};
