// Emits an outbound webhook event: one outbox row per enabled endpoint of the workspace that is
// subscribed to the event's type, written in the caller's transaction, so an event exists if and
// only if the change that caused it committed. A Connect event also goes to the client-level
// endpoints (api `connect_client`) of every client whose active grant from the workspace holds
// `webhooks:write`, naming the workspace and grant; no other client's endpoint is ever selected. The envelope is built here once; every attempt
// sends the same bytes (the outbox signs each attempt afresh, see ./setup.ts).
import type { Kysely, Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { enqueue } from '#server/outbox/outbox.js';
import type { Database } from '#server/store/schema.js';

/** `connect_client`: a Connect client's own endpoints, receiving every granting workspace's events. */
export type WebhookApi = 'connect' | 'messaging' | 'connect_client';

/** The outbox `endpoint_kind` of each API's endpoints. */
export const ENDPOINT_KIND: Record<WebhookApi, string> = {
  connect: 'connect_webhook',
  messaging: 'messaging_webhook',
  connect_client: 'connect_client_webhook',
};

const CONNECT_EVENTS = ['link.opened', 'session.updated', 'link.revoked', 'document.updated'];

/** Events about a grant: to the grant's client's endpoints only. */
export const GRANT_EVENTS = ['grant.created', 'grant.revoked'];

/** The event types endpoints subscribe to (spec/webhooks/connect.tsp, messaging.tsp). */
export const EVENT_TYPES: Record<WebhookApi, readonly string[]> = {
  connect: CONNECT_EVENTS,
  messaging: ['message.received', 'message.status_updated', 'template.status_updated', 'campaign.completed', 'campaign.failed'],
  connect_client: [...CONNECT_EVENTS, ...GRANT_EVENTS],
};

/** The scope a grant needs for its client's endpoints to receive the workspace's events. */
export const CLIENT_EVENTS_SCOPE = 'webhooks:write';

/** Sent only when asked for, to one endpoint; never subscribed to. */
export const TEST_EVENT_TYPE = 'webhook_endpoint.test';

export interface NewEvent {
  workspaceId: string;
  api: WebhookApi;
  type: string;
  data: unknown;
  /** When the event happened (defaults to now). */
  at?: Date;
  /** Only this endpoint (test events); otherwise every subscribed, enabled endpoint. */
  endpointId?: string;
  /** Grant events: the grant, whose client's endpoints alone receive the event. */
  grant?: { id: string; clientId: string };
}

/** Where a client-level delivery's event happened: its workspace and grant. */
interface ClientContext {
  org_id: string;
  org_slug: string;
  grant_id: string;
}

/** The envelope of each API, fields in the spec's order (spec/webhooks/connect.tsp, messaging.tsp). */
export function envelope(event: NewEvent, id: string, apiVersion: string, client?: ClientContext): Record<string, unknown> {
  const created = Math.floor((event.at ?? new Date()).getTime() / 1000);
  return event.api === 'messaging'
    ? { id, type: event.type, created, workspace_id: event.workspaceId, data: event.data }
    : { id, type: event.type, created, api_version: apiVersion, ...client, data: event.data };
}

/** An event type the API does not declare is a bug in the caller: it fails loudly, before any write. */
function checkType(event: NewEvent): void {
  const grantEvent = GRANT_EVENTS.includes(event.type);
  if (grantEvent !== (event.grant !== undefined && event.api === 'connect')) throw new Error(`emitEvent: ${event.type} and a grant go together`);
  const declared = EVENT_TYPES[event.api].includes(event.type) || grantEvent;
  const test = event.type === TEST_EVENT_TYPE && event.endpointId !== undefined;
  if (!declared && !test) throw new Error(`emitEvent: ${event.type} is not a ${event.api} event type${event.type === TEST_EVENT_TYPE ? ' to broadcast' : ''}`);
}

type Tx = Transaction<Database> | Kysely<Database>;
type Target = { id: string; workspace_id: string; api_version: string; client?: ClientContext };

/** The endpoints of the workspace (of `event.api`) that want the event. */
async function workspaceEndpoints(tx: Tx, event: NewEvent): Promise<Target[]> {
  if (event.grant) return [];
  let query = tx
    .selectFrom('webhook_endpoints')
    .select(['id', 'workspace_id', 'api_version'])
    .where('workspace_id', '=', event.workspaceId)
    .where('api', '=', event.api)
    .where('status', '=', 'enabled');
  query = event.endpointId
    ? query.where('id', '=', event.endpointId)
    : query.where((eb) => eb.or([eb(eb.val(event.type), '=', eb.fn.any('event_types')), eb(eb.val('*'), '=', eb.fn.any('event_types'))]));
  return query.execute();
}

/**
 * The client-level endpoints that want a Connect event of `event.workspaceId`: those of the
 * grant's client for a grant event, else those of each client whose active grant from this
 * workspace holds `webhooks:write`. The join on the grant is what binds an endpoint to the
 * workspaces that granted its own client, and nothing else.
 */
async function clientEndpoints(tx: Tx, event: NewEvent): Promise<Target[]> {
  if (event.api !== 'connect' || event.endpointId) return [];
  let query = tx
    .selectFrom('webhook_endpoints as e')
    .innerJoin('connect_grants as g', 'g.client_id', 'e.client_id')
    .innerJoin('workspaces as w', 'w.id', 'g.workspace_id')
    .select(['e.id', 'e.workspace_id', 'e.api_version', 'g.id as grant_id', 'w.id as org_id', 'w.slug as org_slug'])
    .where('e.api', '=', 'connect_client')
    .where('e.status', '=', 'enabled')
    .where('g.workspace_id', '=', event.workspaceId)
    .where((eb) => eb.or([eb(eb.val(event.type), '=', eb.fn.any('e.event_types')), eb(eb.val('*'), '=', eb.fn.any('e.event_types'))]));
  query = event.grant
    ? query.where('g.id', '=', event.grant.id).where('e.client_id', '=', event.grant.clientId)
    : query.where('g.status', '=', 'active').where((eb) => eb(eb.val(CLIENT_EVENTS_SCOPE), '=', eb.fn.any('g.scopes')));
  const rows = await query.execute();
  return rows.map((r) => ({
    id: r.id,
    workspace_id: r.workspace_id,
    api_version: r.api_version,
    client: { org_id: r.org_id, org_slug: r.org_slug, grant_id: r.grant_id },
  }));
}

/**
 * The endpoints found for events of one transaction, by workspace, API and type: a batch of
 * deliveries (the provider inbox's) emitting thousands of events of one kind looks them up once.
 */
export type EndpointCache = Map<string, Target[]>;

/** Enqueues the event for its endpoints; answers the event id, or null when no endpoint wants it. */
export async function emitEvent(tx: Tx, event: NewEvent, cache?: EndpointCache): Promise<string | null> {
  checkType(event);
  const key = cache && !event.endpointId && !event.grant ? `${event.workspaceId} ${event.api} ${event.type}` : undefined;
  let endpoints = key ? cache!.get(key) : undefined;
  if (!endpoints) {
    endpoints = [...(await workspaceEndpoints(tx, event)), ...(await clientEndpoints(tx, event))];
    if (key) cache!.set(key, endpoints);
  }
  if (!endpoints.length) return null;
  const eventId = newId('evt');
  const at = event.at ?? new Date();
  // `at` is when the event happened; a clock ahead of ours (a provider's timestamp) must not delay it.
  const due = new Date(Math.min(at.getTime(), Date.now()));
  for (const endpoint of endpoints) {
    const api: WebhookApi = endpoint.client ? 'connect_client' : event.api;
    await enqueue(
      tx,
      {
        // A client endpoint's rows belong to the workspace that registered the client (its log).
        workspaceId: endpoint.workspace_id,
        endpointKind: ENDPOINT_KIND[api],
        endpointId: endpoint.id,
        eventId,
        eventType: event.type,
        payload: JSON.stringify(envelope({ ...event, at }, eventId, endpoint.api_version, endpoint.client)),
      },
      due,
    );
  }
  return eventId;
}
