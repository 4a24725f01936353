// Connect webhook endpoints, deliveries, redelivery, test events: the workspace's endpoints
// (ConnectOAuth, `webhooks:write`) and a Connect client's own endpoints (HTTP Basic client
// credentials, ./client-basic.ts), one set of handlers over the endpoint's owner.
import type { FastifyRequest } from 'fastify';
import type { components, operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import './client-basic.js';
import { getDelivery, listDeliveries, redeliver, sendTestEvent } from './deliveries.js';
import {
  createCheckedEndpoint,
  listEndpoints,
  DEFAULT_OVERLAP_SECONDS,
  deleteEndpoint,
  type EndpointCreateBody,
  type EndpointOwner,
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
type Ops = operations;

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

/** The workspace's Connect endpoints (a workspace token). */
const workspaceOwner = (request: FastifyRequest): EndpointOwner => ({ workspaceId: authOf(request).workspaceId, api: 'connect' });

/** The calling client's own endpoints, under the workspace that registered it. */
const clientOwner = (request: FastifyRequest): EndpointOwner => {
  const auth = authOf(request);
  return { workspaceId: auth.workspaceId, api: 'connect_client', clientId: auth.clientId };
};

const find = (platform: Platform, owner: EndpointOwner, endpointId: string) =>
  findEndpoint(platform.store.db, owner.workspaceId, owner.api, endpointId, owner.clientId);

type AnyRequest = FastifyRequest<{ Params: Record<string, string>; Body: any; Querystring: any }>;

/** The handlers of one kind of owner; `idOf` reads the endpoint id from the path. */
function endpointHandlers(ownerOf: (request: FastifyRequest) => EndpointOwner, idOf: (params: Record<string, string>) => string, listOperation: string) {
  return {
    async create(request: AnyRequest, reply: Parameters<Handler<Ops['createWebhookEndpoint']>>[1]) {
      const owner = ownerOf(request);
      const platform = request.server.platform;
      const { row, secret } = await createCheckedEndpoint(platform, owner.workspaceId, owner.api, request.body as EndpointCreateBody, owner.clientId);
      reply.code(201);
      return { ...endpointView(row, platform.now()), secret };
    },

    async list(request: AnyRequest) {
      const owner = ownerOf(request);
      const platform = request.server.platform;
      const now = platform.now();
      const page = (request.query ?? {}) as PageQuery;
      return listEndpoints(platform, owner.workspaceId, owner.api, listOperation, page, (row) => endpointView(row, now), owner.clientId);
    },

    async get(request: AnyRequest) {
      const platform = request.server.platform;
      return endpointView(await find(platform, ownerOf(request), idOf(request.params)), platform.now());
    },

    async update(request: AnyRequest) {
      const owner = ownerOf(request);
      const platform = request.server.platform;
      const body = request.body as Ops['updateWebhookEndpoint']['requestBody']['content']['application/json'];
      const row = await updateEndpoint(platform, owner.workspaceId, owner.api, idOf(request.params), body, owner.clientId);
      return endpointView(row, platform.now());
    },

    async delete(request: AnyRequest, reply: Parameters<Handler<Ops['deleteWebhookEndpoint']>>[1]) {
      const owner = ownerOf(request);
      await deleteEndpoint(request.server.platform, owner.workspaceId, owner.api, idOf(request.params), owner.clientId);
      return reply.code(204).send();
    },

    async rotateSecret(request: AnyRequest) {
      const platform = request.server.platform;
      const current = await find(platform, ownerOf(request), idOf(request.params));
      const overlap = (request.body as { overlap_seconds?: number } | undefined)?.overlap_seconds ?? DEFAULT_OVERLAP_SECONDS;
      const { row, secret } = await rotateSecret(platform, current, overlap);
      return { ...endpointView(row, platform.now()), secret };
    },

    async sendTestEvent(request: AnyRequest, reply: Parameters<Handler<Ops['sendWebhookTestEvent']>>[1]) {
      const platform = request.server.platform;
      const delivery = await sendTestEvent(platform, await find(platform, ownerOf(request), idOf(request.params)), TEST_MESSAGE);
      reply.code(202);
      return delivery;
    },

    async listDeliveries(request: AnyRequest) {
      const owner = ownerOf(request);
      const platform = request.server.platform;
      const endpoint = await find(platform, owner, idOf(request.params));
      const { status, event_type, event_id, limit = 20, cursor } = (request.query ?? {}) as DeliveriesQuery;
      // Bound to the endpoint too: a cursor of another endpoint's log is refused, not reinterpreted.
      const scope = { workspaceId: owner.workspaceId, operation: `listWebhookDeliveries:${endpoint.id}` };
      const after = decodeKeyset(platform.secrets, scope, cursor);
      const rows = await listDeliveries(platform, endpoint, { status, eventType: event_type, eventId: event_id, after, limit });
      return keysetPage(platform.secrets, scope, rows, limit, (row) => row.view);
    },

    async getDelivery(request: AnyRequest) {
      const platform = request.server.platform;
      const endpoint = await find(platform, ownerOf(request), idOf(request.params));
      return getDelivery(platform, endpoint, request.params.deliveryId!);
    },

    async redeliver(request: AnyRequest, reply: Parameters<Handler<Ops['redeliverWebhookDelivery']>>[1]) {
      const platform = request.server.platform;
      const endpoint = await find(platform, ownerOf(request), idOf(request.params));
      const delivery = await redeliver(platform, endpoint, request.params.deliveryId!);
      reply.code(202);
      return delivery;
    },
  };
}

const ws = endpointHandlers(workspaceOwner, (p) => p.endpointId!, 'listWebhookEndpoints');
const client = endpointHandlers(clientOwner, (p) => p.clientEndpointId!, 'listClientWebhookEndpoints');

export const connectWebhookHandlers = {
  createWebhookEndpoint: ws.create,
  listWebhookEndpoints: ws.list,
  getWebhookEndpoint: ws.get,
  updateWebhookEndpoint: ws.update,
  deleteWebhookEndpoint: ws.delete,
  rotateWebhookEndpointSecret: ws.rotateSecret,
  sendWebhookTestEvent: ws.sendTestEvent,
  listWebhookDeliveries: ws.listDeliveries,
  getWebhookDelivery: ws.getDelivery,
  redeliverWebhookDelivery: ws.redeliver,
  createClientWebhookEndpoint: client.create,
  listClientWebhookEndpoints: client.list,
  getClientWebhookEndpoint: client.get,
  updateClientWebhookEndpoint: client.update,
  deleteClientWebhookEndpoint: client.delete,
  rotateClientWebhookEndpointSecret: client.rotateSecret,
  sendClientWebhookTestEvent: client.sendTestEvent,
  listClientWebhookDeliveries: client.listDeliveries,
  getClientWebhookDelivery: client.getDelivery,
  redeliverClientWebhookDelivery: client.redeliver,
} as Handlers<operations>;
