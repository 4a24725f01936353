// Messaging webhook endpoints (API key or owner). Deliveries are signed `X-Messaging-Signature`
// by the destination registered in ./setup.ts; rotation keeps the old secret signing for a day.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handlers } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { getDelivery, listDeliveries, redeliver, sendTestEvent } from './deliveries.js';
import {
  createCheckedEndpoint,
  DEFAULT_OVERLAP_SECONDS,
  deleteEndpoint,
  type EndpointRow,
  findEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from './endpoints.js';

type Endpoint = components['schemas']['MessagingWebhookEndpoint'];
type EventType = components['schemas']['MessagingWebhookEventType'];
type Status = components['schemas']['MessagingWebhookEndpointStatus'];
type Delivery = components['schemas']['MessagingWebhookDelivery'];
type DeliveryEventType = components['schemas']['MessagingWebhookDeliveryEventType'];
type PageQuery = { limit?: number; cursor?: string };
type DeliveriesQuery = NonNullable<operations['listMessagingWebhookDeliveries']['parameters']['query']>;

const TEST_MESSAGE = 'This is a test event from the Messaging API.';

/** `whsec_` and 4 random characters: enough to tell secrets apart, nothing to guess with. */
const HINT_LENGTH = 10;

function endpointView(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabled_events: row.event_types as EventType[],
    status: row.status as Status,
    secret_hint: row.secret_prefix.slice(0, HINT_LENGTH),
    created_at: row.created_at.toISOString(),
  };
}

/** The shared delivery log (./deliveries.ts) speaks Connect's types; the fields are the same, the event types Messaging's. */
function asMessaging<D extends { event_type: string }>(delivery: D): Omit<D, 'event_type'> & { event_type: DeliveryEventType } {
  return { ...delivery, event_type: delivery.event_type as DeliveryEventType };
}

const find = (platform: Platform, workspaceId: string, endpointId: string) => findEndpoint(platform.store.db, workspaceId, 'messaging', endpointId);

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
    return endpointView(await find(request.server.platform, workspaceId, request.params.endpointId));
  },

  async deleteMessagingWebhookEndpoint(request, reply) {
    const { workspaceId } = authOf(request);
    await deleteEndpoint(request.server.platform, workspaceId, 'messaging', request.params.endpointId);
    return reply.code(204).send();
  },

  async rotateMessagingWebhookEndpointSecret(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const current = await find(platform, workspaceId, request.params.endpointId);
    const { row, secret } = await rotateSecret(platform, current, DEFAULT_OVERLAP_SECONDS);
    return { endpoint_id: row.id, secret, previous_secret_expires_at: row.previous_secret_expires_at!.toISOString() };
  },

  async updateMessagingWebhookEndpoint(request) {
    const { workspaceId } = authOf(request);
    return endpointView(await updateEndpoint(request.server.platform, workspaceId, 'messaging', request.params.endpointId, request.body));
  },

  async sendMessagingWebhookTestEvent(request, reply) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const delivery = await sendTestEvent(platform, await find(platform, workspaceId, request.params.endpointId), TEST_MESSAGE);
    reply.code(202);
    return asMessaging(delivery) satisfies Delivery;
  },

  async listMessagingWebhookDeliveries(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    const { status, event_type, event_id, limit = 20, cursor } = (request.query ?? {}) as DeliveriesQuery;
    // Bound to the endpoint too: a cursor of another endpoint's log is refused, not reinterpreted.
    const scope = { workspaceId, operation: `listMessagingWebhookDeliveries:${endpoint.id}` };
    const after = decodeKeyset(platform.secrets, scope, cursor);
    const rows = await listDeliveries(platform, endpoint, { status, eventType: event_type, eventId: event_id, after, limit });
    return keysetPage(platform.secrets, scope, rows, limit, (row) => asMessaging(row.view));
  },

  async getMessagingWebhookDelivery(request) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    return asMessaging(await getDelivery(platform, endpoint, request.params.deliveryId));
  },

  async redeliverMessagingWebhookDelivery(request, reply) {
    const { workspaceId } = authOf(request);
    const platform = request.server.platform;
    const endpoint = await find(platform, workspaceId, request.params.endpointId);
    const delivery = await redeliver(platform, endpoint, request.params.deliveryId);
    reply.code(202);
    return asMessaging(delivery);
  },
};
