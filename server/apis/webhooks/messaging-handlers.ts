// Messaging webhook endpoints (API key or owner). Deliveries are signed `X-Messaging-Signature`
// by the destination registered in ./setup.ts; rotation keeps the old secret signing for a day.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createCheckedEndpoint, DEFAULT_OVERLAP_SECONDS, deleteEndpoint, type EndpointRow, findEndpoint, listEndpoints, rotateSecret } from './endpoints.js';

type Endpoint = components['schemas']['MessagingWebhookEndpoint'];
type EventType = components['schemas']['MessagingWebhookEventType'];
type PageQuery = { limit?: number; cursor?: string };

/** `whsec_` and 4 random characters: enough to tell secrets apart, nothing to guess with. */
const HINT_LENGTH = 10;

function endpointView(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabled_events: row.event_types as EventType[],
    secret_hint: row.secret_prefix.slice(0, HINT_LENGTH),
    created_at: row.created_at.toISOString(),
  };
}

export const messagingWebhookHandlers: Handlers<operations> = {
  async createMessagingWebhookEndpoint(request, reply) {
    const { workspaceId } = authOf(request);
    const { row, secret } = await createCheckedEndpoint(request.server.platform, workspaceId, 'messaging', request.body);
    reply.code(201);
    return { ...endpointView(row), secret };
  },

  async listMessagingWebhookEndpoints(request) {
    const { workspaceId } = authOf(request);
    return listEndpoints(request.server.platform, workspaceId, 'messaging', 'listMessagingWebhookEndpoints', (request.query ?? {}) as PageQuery, endpointView);
  },

  async getMessagingWebhookEndpoint(request) {
    const { workspaceId } = authOf(request);
    return endpointView(await findEndpoint(request.server.platform.store.db, workspaceId, 'messaging', request.params.endpointId));
  },

  async deleteMessagingWebhookEndpoint(request, reply) {
    const { workspaceId } = authOf(request);
    await deleteEndpoint(request.server.platform, workspaceId, 'messaging', request.params.endpointId);
    return reply.code(204).send();
  },

  async rotateMessagingWebhookEndpointSecret(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const current = await findEndpoint(platform.store.db, workspaceId, 'messaging', request.params.endpointId);
    const { row, secret } = await rotateSecret(platform, current, DEFAULT_OVERLAP_SECONDS);
    return { endpoint_id: row.id, secret, previous_secret_expires_at: row.previous_secret_expires_at!.toISOString() };
  },
};
