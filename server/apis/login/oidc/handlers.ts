// OpenID Connect operations of the Login API (spec/login/operations/oidc.tsp) and the route
// options they need beyond the pipeline: the authorization page's HTML errors, the token
// endpoint's RFC 6749 §5.2 errors.
import type { operations } from '#generated/login/types.js';
import { oauthErrorHandler, oauthFormat } from '#server/apis/connect/oauth/oauth-errors.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { oidcAuthorize, oidcAuthorizeErrorHandler } from './authorize.js';
import { findOidcApp, providerMetadata } from './provider.js';
import { createOidcToken, getOidcUserInfo } from './token.js';

const getOidcConfiguration: Handler<operations['getOidcConfiguration']> = async (request, reply) => {
  const { platform } = request.server;
  const app = await findOidcApp(platform, request.params.appId);
  if (!app) throw new HttpProblem(404, 'not-found', `No OpenID provider ${request.params.appId}.`);
  reply.header('cache-control', 'public, max-age=300');
  return providerMetadata(platform, app.id);
};

export const oidcHandlers = { getOidcConfiguration, oidcAuthorize, createOidcToken, getOidcUserInfo };

export const oidcRouteOptions = {
  oidcAuthorize: { errorHandler: oidcAuthorizeErrorHandler },
  createOidcToken: { errorHandler: oauthErrorHandler, onSend: oauthFormat },
};
