// The delivery log of an endpoint, read from the outbox (one row per event and endpoint) and
// its attempts (`delivery_attempts`), and redelivery: a new outbox row with the same event id
// and body bytes, signed afresh, on a new retry schedule.
import { sql, type Selectable } from 'kysely';
import type { components } from '#generated/connect/types.js';
import { base62 } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { enqueue } from '#server/outbox/outbox.js';
import type { Platform } from '#server/platform.js';
import type { DeliveryAttemptsTable, OutboxTable } from '#server/store/schema.js';
import { ENDPOINT_KIND, emitEvent, TEST_EVENT_TYPE, type WebhookApi } from './emit.js';
import { CANCELLED, type EndpointRow } from './endpoints.js';

type Delivery = components['schemas']['WebhookDelivery'];
type DeliveryDetail = components['schemas']['WebhookDeliveryDetail'];
type DeliveryStatus = components['schemas']['WebhookDeliveryStatus'];
type FailureReason = components['schemas']['WebhookFailureReason'];
type EventType = components['schemas']['WebhookEventType'];
type OutboxRow = Selectable<OutboxTable> & { redelivery_of: string | null; true_event_id: string | null };
type AttemptRow = Selectable<DeliveryAttemptsTable>;

export const deliveryNotFound = () => new HttpProblem(404, 'not-found', 'No delivery with this id.');

/** Why an attempt failed, from what the outbox logged (the poster reports errors as text). */
export function failureReason(status: number | null, error: string | null): FailureReason | undefined {
  if (status !== null) {
    if (status >= 200 && status < 300) return undefined;
    return status >= 300 && status < 400 ? 'redirect' : 'http_status';
  }
  if (!error) return undefined;
  if (/not allowed/i.test(error)) return 'unsafe_url';
  if (/timeout|timed out|within \d+ ms/i.test(error)) return 'timeout';
  if (/certificate|tls|ssl/i.test(error)) return 'tls_error';
  return 'connection_error';
}

function statusOf(row: OutboxRow): DeliveryStatus {
  if (row.status === 'succeeded') return 'succeeded';
  if (row.status === 'failed') return row.last_error === CANCELLED ? 'cancelled' : 'failed';
  return row.last_error === null ? 'pending' : 'retrying';
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function deliveryView(row: OutboxRow, attempts: AttemptRow[]): Delivery {
  const last = attempts.at(-1);
  const status = statusOf(row);
  const reason = last && status !== 'succeeded' ? failureReason(last.status_code, last.error) : undefined;
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.true_event_id ?? row.event_id,
    event_type: row.event_type as EventType,
    status,
    attempt: attempts.length,
    response_status: last?.status_code ?? null,
    response_body: last?.response_excerpt ?? null,
    duration_ms: last?.duration_ms ?? null,
    ...(reason ? { failure_reason: reason } : {}),
    next_retry_at: status === 'pending' || status === 'retrying' ? row.next_attempt_at.toISOString() : null,
    ...(row.redelivery_of ? { redelivery_of: row.redelivery_of } : {}),
    created_at: row.created_at.toISOString(),
    last_attempt_at: iso(last?.started_at ?? null),
  };
}

function detailView(row: OutboxRow, attempts: AttemptRow[]): DeliveryDetail {
  return {
    ...deliveryView(row, attempts),
    attempts: attempts.map((a, i) => {
      const reason = failureReason(a.status_code, a.error);
      return {
        attempt: i + 1,
        started_at: a.started_at.toISOString(),
        duration_ms: a.duration_ms,
        response_status: a.status_code,
        response_body: a.response_excerpt,
        ...(reason ? { failure_reason: reason } : {}),
      };
    }),
  };
}

/** The endpoint's deliveries with their redelivery links; `created_at` cut to milliseconds for keyset cursors. */
function deliveries(platform: Platform, endpoint: EndpointRow) {
  return platform.store.db
    .selectFrom('outbox')
    .leftJoin('webhook_redeliveries as r', 'r.outbox_id', 'outbox.id')
    .selectAll('outbox')
    .select(['r.redelivery_of', 'r.event_id as true_event_id', sql<Date>`date_trunc('milliseconds', outbox.created_at)`.as('created_ms')])
    .where('outbox.workspace_id', '=', endpoint.workspace_id)
    .where('outbox.endpoint_id', '=', endpoint.id)
    .where('outbox.endpoint_kind', '=', ENDPOINT_KIND[endpoint.api as keyof typeof ENDPOINT_KIND]);
}

async function attemptsOf(platform: Platform, ids: string[]): Promise<Map<string, AttemptRow[]>> {
  const byRow = new Map<string, AttemptRow[]>(ids.map((id) => [id, []]));
  if (!ids.length) return byRow;
  const rows = await platform.store.db
    .selectFrom('delivery_attempts')
    .selectAll()
    .where('outbox_id', 'in', ids)
    .orderBy('started_at')
    .orderBy('attempt')
    .execute();
  for (const row of rows) byRow.get(row.outbox_id)?.push(row);
  return byRow;
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  eventType?: string;
  eventId?: string;
  /** The position after which the page starts (newest first). */
  after?: { createdAt: Date; id: string };
  limit: number;
}

/** One page (`limit + 1` rows fetched, to tell whether more follow) of the endpoint's deliveries, newest first. */
export async function listDeliveries(platform: Platform, endpoint: EndpointRow, filter: DeliveryFilter) {
  let query = deliveries(platform, endpoint);
  switch (filter.status) {
    case 'pending':
      query = query.where('outbox.status', '=', 'pending').where('outbox.last_error', 'is', null);
      break;
    case 'retrying':
      query = query.where('outbox.status', '=', 'pending').where('outbox.last_error', 'is not', null);
      break;
    case 'succeeded':
      query = query.where('outbox.status', '=', 'succeeded');
      break;
    case 'failed':
      query = query.where('outbox.status', '=', 'failed').where((eb) => eb.or([eb('outbox.last_error', 'is', null), eb('outbox.last_error', '!=', CANCELLED)]));
      break;
    case 'cancelled':
      query = query.where('outbox.status', '=', 'failed').where('outbox.last_error', '=', CANCELLED);
      break;
  }
  if (filter.eventType) query = query.where('outbox.event_type', '=', filter.eventType);
  if (filter.eventId) query = query.where(sql<string>`split_part(outbox.event_id, '/', 1)`, '=', filter.eventId);
  const after = filter.after;
  if (after)
    query = query.where((eb) =>
      eb(eb.tuple(sql<Date>`date_trunc('milliseconds', outbox.created_at)`, eb.ref('outbox.id')), '<', eb.tuple(after.createdAt, after.id)),
    );
  const rows = await query
    .orderBy(sql`date_trunc('milliseconds', outbox.created_at)`, 'desc')
    .orderBy('outbox.id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  const attempts = await attemptsOf(
    platform,
    rows.map((r) => r.id),
  );
  return rows.map((row) => ({ created_at: row.created_ms, id: row.id, view: deliveryView(row, attempts.get(row.id)!) }));
}

async function findRow(platform: Platform, endpoint: EndpointRow, deliveryId: string): Promise<OutboxRow> {
  const row = await deliveries(platform, endpoint).where('outbox.id', '=', deliveryId).executeTakeFirst();
  if (!row) throw deliveryNotFound();
  return row;
}

export async function getDelivery(platform: Platform, endpoint: EndpointRow, deliveryId: string): Promise<DeliveryDetail> {
  const row = await findRow(platform, endpoint, deliveryId);
  return detailView(row, (await attemptsOf(platform, [row.id])).get(row.id)!);
}

/** The delivery just queued (or as it stands), without its attempts. */
export async function deliveryById(platform: Platform, endpoint: EndpointRow, deliveryId: string): Promise<Delivery> {
  const row = await findRow(platform, endpoint, deliveryId);
  return deliveryView(row, (await attemptsOf(platform, [row.id])).get(row.id)!);
}

/** The same event id and body bytes again, as a new delivery with its own retry schedule. */
export async function redeliver(platform: Platform, endpoint: EndpointRow, deliveryId: string): Promise<Delivery> {
  const original = await findRow(platform, endpoint, deliveryId);
  if (original.status === 'pending') throw new HttpProblem(409, 'conflict', 'The delivery is still being retried.');
  if (endpoint.status !== 'enabled') throw new HttpProblem(409, 'conflict', 'The endpoint is disabled; enable it to redeliver.');
  const eventId = original.true_event_id ?? original.event_id;
  const id = await platform.store.db.transaction().execute(async (tx) => {
    const outboxId = await enqueue(
      tx,
      {
        workspaceId: endpoint.workspace_id,
        endpointKind: original.endpoint_kind,
        endpointId: endpoint.id,
        // The outbox keeps one row per (event_id, endpoint_id); the suffix makes this row another.
        eventId: `${eventId}/${base62(12)}`,
        eventType: original.event_type,
        payload: original.payload,
      },
      platform.now(),
    );
    await tx
      .insertInto('webhook_redeliveries')
      .values({ outbox_id: outboxId, workspace_id: endpoint.workspace_id, event_id: eventId, redelivery_of: original.id })
      .execute();
    return outboxId;
  });
  return deliveryById(platform, endpoint, id);
}

/** Queues a test event to this endpoint only; answers its delivery. A disabled endpoint is a 409. */
export async function sendTestEvent(platform: Platform, endpoint: EndpointRow, message: string): Promise<Delivery> {
  const disabled = () => new HttpProblem(409, 'conflict', 'The endpoint is disabled; enable it to send a test event.');
  if (endpoint.status !== 'enabled') throw disabled();
  const deliveryId = await platform.store.db.transaction().execute(async (tx) => {
    const eventId = await emitEvent(tx, {
      workspaceId: endpoint.workspace_id,
      api: endpoint.api as WebhookApi,
      type: TEST_EVENT_TYPE,
      data: { webhook_endpoint_id: endpoint.id, message },
      endpointId: endpoint.id,
      at: platform.now(),
    });
    if (!eventId) throw disabled(); // disabled or deleted since it was read
    const row = await tx.selectFrom('outbox').select('id').where('event_id', '=', eventId).where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow();
    return row.id;
  });
  return deliveryById(platform, endpoint, deliveryId);
}
