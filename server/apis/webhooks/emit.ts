// Emits an outbound webhook event: one outbox row per enabled endpoint of the workspace that is
// subscribed to the event's type, written in the caller's transaction, so an event exists if and
// only if the change that caused it committed. The envelope is built here once; every attempt
// sends the same bytes (the outbox signs each attempt afresh, see ./setup.ts).
import type { Kysely, Transaction } from 'kysely';
import { newId } from '../../lib/ids.js';
import { enqueue } from '../../outbox/outbox.js';
import type { Database } from '../../store/schema.js';

export type WebhookApi = 'connect' | 'messaging';

/** The outbox `endpoint_kind` of each API's endpoints. */
export const ENDPOINT_KIND: Record<WebhookApi, string> = { connect: 'connect_webhook', messaging: 'messaging_webhook' };

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

/** The envelope of each API (spec/webhooks/connect.tsp, messaging.tsp). */
export function envelope(event: NewEvent, id: string, apiVersion: string): Record<string, unknown> {
  const created = Math.floor((event.at ?? new Date()).getTime() / 1000);
  return event.api === 'connect'
    ? { id, type: event.type, created, api_version: apiVersion, data: event.data }
    : { id, type: event.type, created, workspace_id: event.workspaceId, data: event.data };
}

/** Enqueues the event for its endpoints; answers the event id, or null when no endpoint wants it. */
export async function emitEvent(tx: Transaction<Database> | Kysely<Database>, event: NewEvent): Promise<string | null> {
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
  for (const endpoint of endpoints) {
    await enqueue(
      tx,
      {
        workspaceId: event.workspaceId,
        endpointKind: ENDPOINT_KIND[event.api],
        endpointId: endpoint.id,
        eventId,
        eventType: event.type,
        payload: JSON.stringify(envelope(event, eventId, endpoint.api_version)),
      },
      event.at,
    );
  }
  return eventId;
}
