// Webhook endpoints of Connect and Messaging: the rules and storage both APIs share. Every query
// is scoped to the caller's workspace and API, so another workspace's id answers the same 404
// as an unknown one. Secrets are generated here, encrypted at rest, and returned only by
// `createEndpoint` and `rotateSecret`.
import type { Kysely, Selectable, Transaction } from 'kysely';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { WebhookEndpointsTable } from '#server/store/schema/webhook-endpoints.js';
import { ENDPOINT_KIND, EVENT_TYPES, type WebhookApi } from './emit.js';

export type EndpointRow = Selectable<WebhookEndpointsTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** Endpoints per workspace and API (Stripe allows 16 too): more is a plan limit, not a bug. */
export const MAX_ENDPOINTS = 16;

/** How long a rotated-out secret keeps signing unless told otherwise: one day. */
export const DEFAULT_OVERLAP_SECONDS = 86_400;

/** The outbox `last_error` of rows not delivered because their endpoint went away (outbox.ts writes the same). */
export const CANCELLED = 'endpoint deleted or disabled';

const SECRET_PREFIX_LENGTH = 12;

export const endpointNotFound = () => new HttpProblem(404, 'not-found', 'No webhook endpoint with this id.');

const invalid = (pointer: string, detail: string, why: string) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail: why }] });

/** The URL as accepted (G): 400 for syntax or scheme, 422 `unsafe-url` for the target, naming the field. */
export async function checkEndpointUrl(platform: Platform, url: string, field = 'url'): Promise<void> {
  try {
    await platform.webhookFetch.check(url);
  } catch (error) {
    if (error instanceof UnsafeUrlError) {
      if (error.status === 400) throw invalid(`/body/${field}`, `${field} is not an acceptable webhook URL: ${error.reason}.`, error.reason);
      throw new HttpProblem(422, 'unsafe-url', `${field} is not an allowed webhook target: ${error.reason}.`, {
        errors: [{ pointer: `/body/${field}`, detail: error.reason }],
      });
    }
    // A name that does not resolve now may resolve later; the connect-time guard decides then.
    if (!(error instanceof FetchFailedError)) throw error;
  }
}

/** Event types each once, from the API's list; `*` (Connect) only on its own. */
export function checkEventTypes(api: WebhookApi, types: string[]): string[] {
  const pointer = '/body/enabled_events';
  if (new Set(types).size !== types.length) throw invalid(pointer, 'enabled_events lists an event type twice.', 'each event type at most once');
  if (api === 'connect') {
    const grant = types.find((t) => EVENT_TYPES.connect_client.includes(t) && !EVENT_TYPES.connect.includes(t));
    if (grant) throw invalid(pointer, `enabled_events: ${grant} goes to client endpoints only.`, `${grant} is sent to a client's own endpoints`);
  }
  if (types.includes('*') && (api === 'messaging' || types.length > 1))
    throw invalid(pointer, "enabled_events: '*' stands alone.", "'*' already means every event type");
  const unknown = types.find((t) => t !== '*' && !EVENT_TYPES[api].includes(t));
  if (unknown !== undefined) throw invalid(pointer, `enabled_events: ${unknown} is not an event type of this API.`, `unknown event type ${unknown}`);
  return types;
}

/**
 * Whose endpoints a caller sees: a workspace's of one API, or (api `connect_client`) one Connect
 * client's, which live under the workspace that registered the client.
 */
export interface EndpointOwner {
  workspaceId: string;
  api: WebhookApi;
  /** The client of `connect_client` endpoints. */
  clientId?: string;
}

/** The rows of `owner`: a client endpoint is matched on its client too, so a sibling client's answers 404. */
function owned<Q extends { where: (...args: any[]) => Q }>(query: Q, owner: EndpointOwner): Q {
  const scoped = query.where('workspace_id', '=', owner.workspaceId).where('api', '=', owner.api);
  return owner.api === 'connect_client' ? scoped.where('client_id', '=', owner.clientId ?? '') : scoped;
}

export async function findEndpoint(db: Db, workspaceId: string, api: WebhookApi, endpointId: string, clientId?: string): Promise<EndpointRow> {
  const row = await owned(db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId), { workspaceId, api, clientId }).executeTakeFirst();
  if (!row) throw endpointNotFound();
  return row;
}

/** The secrets that sign at `now`: the current one first, then the previous one within its overlap. */
export function signingSecrets(
  platform: Platform,
  row: Pick<EndpointRow, 'secret_enc' | 'previous_secret_enc' | 'previous_secret_expires_at'>,
  now: Date,
): string[] {
  const secrets = [platform.secrets.decrypt(row.secret_enc)];
  if (row.previous_secret_enc && row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > now.getTime()) {
    secrets.push(platform.secrets.decrypt(row.previous_secret_enc));
  }
  return secrets;
}

/** When the previous secret stops signing, while it still does. */
export function overlapUntil(row: EndpointRow, now: Date): Date | null {
  const until = row.previous_secret_expires_at;
  return row.previous_secret_enc && until && until.getTime() > now.getTime() ? until : null;
}

export interface EndpointInput {
  url: string;
  eventTypes: string[];
  description: string | null;
}

export async function createEndpoint(
  platform: Platform,
  workspaceId: string,
  api: WebhookApi,
  input: EndpointInput,
  clientId?: string,
): Promise<{ row: EndpointRow; secret: string }> {
  const now = platform.now();
  const secret = newSecret('whsec_');
  return platform.store.db.transaction().execute(async (tx) => {
    // Serialises concurrent creates of one workspace, so the cap cannot be overrun by a race.
    await tx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().execute();
    const { count } = await owned(
      tx.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<string>().as('count')),
      { workspaceId, api, clientId },
    ).executeTakeFirstOrThrow();
    if (Number(count) >= MAX_ENDPOINTS) {
      const who = api === 'connect_client' ? 'A client' : 'A workspace';
      throw new HttpProblem(402, 'plan-limit', `${who} has at most ${MAX_ENDPOINTS} webhook endpoints; delete one to add another.`);
    }
    const row = await tx
      .insertInto('webhook_endpoints')
      .values({
        id: newId('whe'),
        workspace_id: workspaceId,
        api,
        client_id: api === 'connect_client' ? clientId : null,
        url: input.url,
        description: input.description,
        event_types: input.eventTypes,
        secret_enc: platform.secrets.encrypt(secret),
        secret_prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
        created_at: now, // from JS, millisecond precision, as list cursors expect
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row, secret };
  });
}

/**
 * A new current secret; the one it replaces signs alongside it for `overlapSeconds` (0: not at
 * all). A previous secret still overlapping from an earlier rotation is retired now.
 */
export async function rotateSecret(platform: Platform, row: EndpointRow, overlapSeconds: number): Promise<{ row: EndpointRow; secret: string }> {
  const now = platform.now();
  const secret = newSecret('whsec_');
  const updated = await platform.store.db
    .updateTable('webhook_endpoints')
    .set({
      secret_enc: platform.secrets.encrypt(secret),
      secret_prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
      previous_secret_enc: overlapSeconds > 0 ? row.secret_enc : null,
      previous_secret_expires_at: overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null,
      updated_at: now,
    })
    .where('id', '=', row.id)
    .where('workspace_id', '=', row.workspace_id)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw endpointNotFound(); // deleted meanwhile
  return { row: updated, secret };
}

/**
 * Cancels the endpoint's deliveries not yet attempted or waiting for a retry (bad-inputs F10). A row leased
 * right now finishes its attempt; its next one finds no destination and is cancelled by the outbox.
 */
export async function cancelPending(tx: Db, row: Pick<EndpointRow, 'id' | 'workspace_id' | 'api'>, now: Date): Promise<void> {
  await tx
    .updateTable('outbox')
    .set({ status: 'failed', last_error: CANCELLED, finished_at: now })
    .where('endpoint_id', '=', row.id)
    .where('workspace_id', '=', row.workspace_id)
    .where('endpoint_kind', '=', ENDPOINT_KIND[row.api as WebhookApi])
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .execute();
}

export async function deleteEndpoint(platform: Platform, workspaceId: string, api: WebhookApi, endpointId: string, clientId?: string): Promise<void> {
  const now = platform.now();
  await platform.store.db.transaction().execute(async (tx) => {
    const row = await owned(tx.deleteFrom('webhook_endpoints').where('id', '=', endpointId), { workspaceId, api, clientId })
      .returning(['id', 'workspace_id', 'api'])
      .executeTakeFirst();
    if (!row) throw endpointNotFound();
    await cancelPending(tx, row, now);
  });
}

/** A create request's fields as both APIs' contracts name them. */
export interface EndpointCreateBody {
  url: string;
  enabled_events: string[];
  description?: string | null;
}

/** Checks a create request (description, event types, URL) before creating the endpoint. */
export async function createCheckedEndpoint(
  platform: Platform,
  workspaceId: string,
  api: WebhookApi,
  body: EndpointCreateBody,
  clientId?: string,
): Promise<{ row: EndpointRow; secret: string }> {
  const eventTypes = checkEventTypes(api, body.enabled_events);
  await checkEndpointUrl(platform, body.url);
  return createEndpoint(platform, workspaceId, api, { url: body.url, eventTypes, description: body.description ?? null }, clientId);
}

/** One page of the workspace's endpoints of `api`, newest first, with a cursor bound to `operation`. */
export async function listEndpoints<Item>(
  platform: Platform,
  workspaceId: string,
  api: WebhookApi,
  operation: string,
  page: { limit?: number; cursor?: string },
  view: (row: EndpointRow) => Item,
  clientId?: string,
) {
  const { limit = 20, cursor } = page;
  // A client's cursor is bound to the client too: a sibling client's cursor is refused.
  const scope = { workspaceId, operation: clientId ? `${operation}:${clientId}` : operation };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = owned(platform.store.db.selectFrom('webhook_endpoints').selectAll(), { workspaceId, api, clientId });
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, view);
}

/** An update request's fields as both APIs' contracts name them; omitted fields stay. */
export interface EndpointUpdateBody {
  url?: string;
  enabled_events?: string[];
  description?: string | null;
  status?: 'enabled' | 'disabled';
}

/** Checks and applies an update; disabling cancels what waits to be delivered (bad-inputs F10). */
export async function updateEndpoint(
  platform: Platform,
  workspaceId: string,
  api: WebhookApi,
  endpointId: string,
  body: EndpointUpdateBody,
  clientId?: string,
): Promise<EndpointRow> {
  const current = await findEndpoint(platform.store.db, workspaceId, api, endpointId, clientId);
  const eventTypes = body.enabled_events === undefined ? undefined : checkEventTypes(api, body.enabled_events);
  if (body.url !== undefined) await checkEndpointUrl(platform, body.url);
  const now = platform.now();
  return platform.store.db.transaction().execute(async (tx) => {
    const updated = await tx
      .updateTable('webhook_endpoints')
      .set({
        ...(body.url !== undefined ? { url: body.url } : {}),
        ...(eventTypes !== undefined ? { event_types: eventTypes } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.status !== undefined ? { status: body.status } : {}),
        updated_at: now,
      })
      .where('id', '=', current.id)
      .where('workspace_id', '=', workspaceId)
      .where('api', '=', api)
      .returningAll()
      .executeTakeFirst();
    if (!updated) throw endpointNotFound(); // deleted meanwhile
    // Disabling stops deliveries: what waits is cancelled, not kept for a later enable (bad-inputs F10).
    if (updated.status === 'disabled') await cancelPending(tx, updated, now);
    return updated;
  });
}
