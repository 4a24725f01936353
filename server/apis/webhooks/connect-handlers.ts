// Connect webhook endpoints, deliveries, redelivery, test events (ConnectOAuth, `webhooks:write`).
import type { components, operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handlers } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { getDelivery, listDeliveries, redeliver, sendTestEvent } from './deliveries.js';
import {
  createCheckedEndpoint,
  listEndpoints,
  DEFAULT_OVERLAP_SECONDS,
  deleteEndpoint,
  type EndpointRow,
  findEndpoint,
  overlapUntil,
  rotateSecret,
  updateEndpoint,
} from './endpoints.js';

type Endpoint = components['schemas']['WebhookEndpoint'];
type EnabledEvent = components['schemas']['EnabledEvent'];
type PageQuery = { limit?: number; cursor?: string };
type DeliveriesQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;

const TEST_MESSAGE = 'This is a test event from the Connect API.';

function endpointView(row: EndpointRow, now: Date): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabled_events: row.event_types as EnabledEvent[],
    status: row.status as Endpoint['status'],
    api_version: row.api_version,
    secret_prefix: row.secret_prefix,
    previous_secret_expires_at: overlapUntil(row, now)?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const find = (platform: Platform, workspaceId: string, endpointId: string) => findEndpoint(platform.store.db, workspaceId, 'connect', endpointId);

export const connectWebhookHandlers: Handlers<operations> = {
  async createWebhookEndpoint(request, reply) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const { row, secret } = await createCheckedEndpoint(platform, workspaceId, 'connect', request.body);
    reply.code(201);
    return { ...endpointView(row, platform.now()), secret };
  },

  async listWebhookEndpoints(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const now = platform.now();
    return listEndpoints(platform, workspaceId, 'connect', 'listWebhookEndpoints', (request.query ?? {}) as PageQuery, (row) => endpointView(row, now));
  },

  async getWebhookEndpoint(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    return endpointView(await find(platform, workspaceId, request.params.endpointId), platform.now());
  },

  async updateWebhookEndpoint(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const row = await updateEndpoint(platform, workspaceId, 'connect', request.params.endpointId, request.body);
    return endpointView(row, platform.now());
  },

  async deleteWebhookEndpoint(request, reply) {
    const { workspaceId } = authOf(request);
    await deleteEndpoint(request.server.platform, workspaceId, 'connect', request.params.endpointId);
    return reply.code(204).send();
  },

  async rotateWebhookEndpointSecret(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const current = await find(platform, workspaceId, request.params.endpointId);
    const overlap = (request.body as { overlap_seconds?: number } | undefined)?.overlap_seconds ?? DEFAULT_OVERLAP_SECONDS;
    const { row, secret } = await rotateSecret(platform, current, overlap);
    return { ...endpointView(row, platform.now()), secret };
  },

  async sendWebhookTestEvent(request, reply) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const delivery = await sendTestEvent(platform, await find(platform, workspaceId, request.params.endpointId), TEST_MESSAGE);
    reply.code(202);
    return delivery;
  },

  async listWebhookDeliveries(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    const { status, event_type, event_id, limit = 20, cursor } = (request.query ?? {}) as DeliveriesQuery;
    // Bound to the endpoint too: a cursor of another endpoint's log is refused, not reinterpreted.
    const scope = { workspaceId, operation: `listWebhookDeliveries:${endpoint.id}` };
    const after = decodeKeyset(platform.secrets, scope, cursor);
    const rows = await listDeliveries(platform, endpoint, { status, eventType: event_type, eventId: event_id, after, limit });
    return keysetPage(platform.secrets, scope, rows, limit, (row) => row.view);
  },

  async getWebhookDelivery(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    return getDelivery(platform, endpoint, request.params.deliveryId);
  },

  async redeliverWebhookDelivery(request, reply) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    const delivery = await redeliver(platform, endpoint, request.params.deliveryId);
    reply.code(202);
    return delivery;
  },
};
