// Emits an outbound webhook event: one outbox row per enabled endpoint of the workspace that is
// subscribed to the event's type, written in the caller's transaction, so an event exists if and
// only if the change that caused it committed. The envelope is built here once; every attempt
// sends the same bytes (the outbox signs each attempt afresh, see ./setup.ts).
import type { Kysely, Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { enqueue } from '#server/outbox/outbox.js';
import type { Database } from '#server/store/schema.js';

export type WebhookApi = 'connect' | 'messaging';

/** The outbox `endpoint_kind` of each API's endpoints. */
export const ENDPOINT_KIND: Record<WebhookApi, string> = { connect: 'connect_webhook', messaging: 'messaging_webhook' };

/** The event types endpoints subscribe to (spec/webhooks/connect.tsp, messaging.tsp). */
export const EVENT_TYPES: Record<WebhookApi, readonly string[]> = {
  connect: ['link.opened', 'session.updated', 'link.revoked'],
  messaging: ['message.received', 'message.status_updated', 'template.status_updated', 'campaign.completed', 'campaign.failed'],
};

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
}

/** The envelope of each API, fields in the spec's order (spec/webhooks/connect.tsp, messaging.tsp). */
export function envelope(event: NewEvent, id: string, apiVersion: string): Record<string, unknown> {
  const created = Math.floor((event.at ?? new Date()).getTime() / 1000);
  return event.api === 'connect'
    ? { id, type: event.type, created, api_version: apiVersion, data: event.data }
    : { id, type: event.type, created, workspace_id: event.workspaceId, data: event.data };
}

/** An event type the API does not declare is a bug in the caller: it fails loudly, before any write. */
function checkType(event: NewEvent): void {
  const declared = EVENT_TYPES[event.api].includes(event.type);
  const test = event.type === TEST_EVENT_TYPE && event.endpointId !== undefined;
  if (!declared && !test) throw new Error(`emitEvent: ${event.type} is not a ${event.api} event type${event.type === TEST_EVENT_TYPE ? ' to broadcast' : ''}`);
}

/** Enqueues the event for its endpoints; answers the event id, or null when no endpoint wants it. */
export async function emitEvent(tx: Transaction<Database> | Kysely<Database>, event: NewEvent): Promise<string | null> {
  checkType(event);
  let query = tx
    .selectFrom('webhook_endpoints')
    .select(['id', 'api_version'])
    .where('workspace_id', '=', event.workspaceId)
    .where('api', '=', event.api)
    .where('status', '=', 'enabled');
  query = event.endpointId
    ? query.where('id', '=', event.endpointId)
    : query.where((eb) => eb.or([eb(eb.val(event.type), '=', eb.fn.any('event_types')), eb(eb.val('*'), '=', eb.fn.any('event_types'))]));
  const endpoints = await query.execute();
  if (!endpoints.length) return null;
  const eventId = newId('evt');
  const at = event.at ?? new Date();
  // `at` is when the event happened; a clock ahead of ours (a provider's timestamp) must not delay it.
  const due = new Date(Math.min(at.getTime(), Date.now()));
  for (const endpoint of endpoints) {
    await enqueue(
      tx,
      {
        workspaceId: event.workspaceId,
        endpointKind: ENDPOINT_KIND[event.api],
        endpointId: endpoint.id,
        eventId,
        eventType: event.type,
        payload: JSON.stringify(envelope({ ...event, at }, eventId, endpoint.api_version)),
      },
      due,
    );
  }
  return eventId;
}
