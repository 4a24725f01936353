// Mounts each API from its generated 3.1 document with fastify-openapi-glue: routes and request
// validation come from the contract; operations without a handler answer 501 not-implemented.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { API_NAMES, contractDocument, type ApiName } from '../contract.js';
import { problem, sendProblem } from '../lib/problems.js';
import { authenticator, type SecurityRequirement } from '../auth/authenticate.js';
import { accountHandlers } from './account/handlers.js';
import { connectHandlers } from './connect/handlers.js';
import { loginHandlers } from './login/handlers.js';
import { messagingHandlers } from './messaging/handlers.js';
import { oauthRouteOptions } from './connect/oauth/oauth-errors.js';
import { providerWebhookRoute } from './messaging/provider-signature.js';

/** Route options beyond handler and authentication, by operationId (e.g. an own error format). */
const ROUTE_OPTIONS: Record<string, Partial<RouteOptions>> = { ...oauthRouteOptions, receiveProviderWebhook: providerWebhookRoute };

const HANDLERS: Record<ApiName, Record<string, unknown>> = {
  account: accountHandlers,
  connect: connectHandlers,
  login: loginHandlers,
  messaging: messagingHandlers,
};

/** operationIds of one API, in document order. */
export function operationIds(api: ApiName): string[] {
  const doc = contractDocument(api, '3.0');
  return Object.values(doc.paths ?? {}).flatMap((item) =>
    Object.values(item as Record<string, { operationId?: string }>).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
  );
}

function notImplemented(operationId: string): RouteHandlerMethod {
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(reply, problem(501, 'not-implemented', `${operationId} is in the contract but not implemented by this server yet.`, { operation_id: operationId }));
}

/** The security requirements of each operation, by operationId (the operation's own, else the document's). */
function securityByOperation(doc: any): Map<string, SecurityRequirement[]> {
  const map = new Map<string, SecurityRequirement[]>();
  for (const item of Object.values<any>(doc.paths ?? {})) {
    for (const op of Object.values<any>(item)) if (op?.operationId) map.set(op.operationId, op.security ?? doc.security ?? []);
  }
  return map;
}

export async function registerApis(app: FastifyInstance): Promise<void> {
  for (const api of API_NAMES) {
    // Glue works on a copy; the webhooks are events we send, not routes we serve.
    const { webhooks: _events, ...specification } = contractDocument(api, '3.1');
    const handlers = HANDLERS[api];
    const security = securityByOperation(specification);
    await app.register(openapiGlue, {
      specification,
      // Authentication is ours, not glue's: each implemented operation checks the schemes its
      // `security` names (server/auth/). An operation without a handler answers 501 at once.
      operationResolver: (operationId: string) => {
        const handler = handlers[operationId] as RouteHandlerMethod | undefined;
        if (!handler) return notImplemented(operationId);
        // glue merges these into the route it builds (method, url and schema come from the document)
        return { ...ROUTE_OPTIONS[operationId], handler, preHandler: authenticator(app, api, operationId, security.get(operationId) ?? []) } as unknown as RouteOptions;
      },
    });
  }
}

/** operationIds that have a handler, per API (for the README's list and the contract suite). */
export function implemented(api: ApiName): Set<string> {
  return new Set(Object.keys(HANDLERS[api]));
}
