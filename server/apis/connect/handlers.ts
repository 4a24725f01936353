// Connect API handlers, keyed by operationId and typed from generated/connect/types.ts, one
// module per area. Operations without a handler answer 501 not-implemented (server/apis/registry.ts).
import type { operations } from '../../../generated/connect/types.js';
import type { Handlers } from '../../lib/handler-types.js';
import { connectWebhookHandlers } from '../webhooks/connect-handlers.js';
import { contentHandlers } from './content/handlers.js';
import { authorizationServerMetadata } from './metadata.js';
import { oauthHandlers } from './oauth/handlers.js';

export const connectHandlers: Handlers<operations> = {
  async getAuthorizationServerMetadata(request, reply) {
    reply.header('cache-control', 'public, max-age=3600');
    return authorizationServerMetadata(request.server.config.publicUrl);
  },
  ...oauthHandlers,
  ...contentHandlers,
  ...connectWebhookHandlers,
};
