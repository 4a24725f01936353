// Connect OAuth: client apps, the authorization server (consent page, token, revocation, metadata).
import type { Area } from '#server/apis/area.js';
import { authorizationServerMetadata } from '../metadata.js';
import { oauthHandlers } from './handlers.js';
import { oauthRouteOptions } from './oauth-errors.js';
import { setup } from './setup.js';

export const connectOAuthArea: Area = {
  name: 'connect/oauth',
  handlers: {
    connect: {
      async getAuthorizationServerMetadata(request, reply) {
        reply.header('cache-control', 'public, max-age=3600');
        return authorizationServerMetadata(request.server.config.publicUrl);
      },
      ...oauthHandlers,
    },
  },
  routes: oauthRouteOptions,
  plugin: setup,
};
