// Connect clients (owner API and the settings page): create with a secret shown once, list, get,
// update, rotate the secret, delete. Everything is scoped to the caller's workspace: another
// workspace's client id answers the same 404 as an unknown one (bad-inputs B1).
import type { Selectable } from 'kysely';
import type { components } from '#generated/connect/types.js';
import { decodeKeyset, keysetPage, type Page } from '#server/lib/cursor.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { ConnectClientsTable } from '#server/store/schema/connect-oauth.js';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from './tokens.js';

type S = components['schemas'];
export type ClientRow = Selectable<ConnectClientsTable>;

const SECRET_PREFIX_LENGTH = 11; // `cs_` and 8 characters
const newClientSecret = () => newSecret('cs_');

export const clientNotFound = () => new HttpProblem(404, 'not-found', 'No Connect client with this id.');

export function clientView(row: ClientRow): S['ConnectClient'] {
  return {
    client_id: row.id,
    name: row.name,
    client_type: row.client_type,
    redirect_uris: row.redirect_uris,
    secret_prefix: row.secret_prefix,
    access_token_ttl_seconds: row.access_token_ttl_seconds ?? ACCESS_TOKEN_TTL_SECONDS,
    refresh_token_ttl_seconds: row.refresh_token_ttl_seconds ?? REFRESH_TOKEN_TTL_SECONDS,
    skip_consent: row.skip_consent,
    dynamically_registered: row.registration_digest !== null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const LOOPBACK = /^(127(?:\.\d{1,3}){3}|\[::1\]|localhost)$/i;

/**
 * The rules the schema's pattern cannot say: an absolute URL that parses, `https` (plain `http`
 * only for a loopback host, RFC 8252 §7.3), no user info, no fragment. The URI is stored as
 * given: authorize compares it character for character.
 */
export function checkRedirectUris(uris: string[], pointer = '/body/redirect_uris'): void {
  const errors: { pointer: string; detail: string }[] = [];
  uris.forEach((uri, i) => {
    let url: URL | undefined;
    try {
      url = new URL(uri);
    } catch {
      // reported below
    }
    const detail = !url
      ? 'is not an absolute URL'
      : url.username || url.password
        ? 'must not contain user info'
        : uri.includes('#')
          ? 'must not contain a fragment'
          : url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname))
            ? undefined
            : 'must use https (http only for loopback hosts)';
    if (detail) errors.push({ pointer: `${pointer}/${i}`, detail });
  });
  if (new Set(uris).size !== uris.length) errors.push({ pointer, detail: 'must not repeat a URI' });
  if (errors.length) throw new HttpProblem(400, 'validation', 'One or more inputs are invalid; see errors.', { errors });
}

/**
 * The options beyond name and URIs, checked against the resulting client: refresh tokens never
 * live shorter than access tokens, and a dynamically registered client never skips consent
 * (someone holding an initial access token is not the owner).
 */
function clientOptions(
  current: ClientRow | undefined,
  body: { access_token_ttl_seconds?: number; refresh_token_ttl_seconds?: number; skip_consent?: boolean },
) {
  const access = body.access_token_ttl_seconds ?? current?.access_token_ttl_seconds ?? ACCESS_TOKEN_TTL_SECONDS;
  const refresh = body.refresh_token_ttl_seconds ?? current?.refresh_token_ttl_seconds ?? REFRESH_TOKEN_TTL_SECONDS;
  if (refresh < access) {
    throw new HttpProblem(400, 'validation', 'One or more inputs are invalid; see errors.', {
      errors: [{ pointer: '/body/refresh_token_ttl_seconds', detail: 'must not be less than access_token_ttl_seconds' }],
    });
  }
  if (body.skip_consent && current?.registration_digest) {
    throw new HttpProblem(409, 'conflict', 'A dynamically registered client cannot skip the consent page.');
  }
  return {
    ...(body.access_token_ttl_seconds !== undefined ? { access_token_ttl_seconds: body.access_token_ttl_seconds } : {}),
    ...(body.refresh_token_ttl_seconds !== undefined ? { refresh_token_ttl_seconds: body.refresh_token_ttl_seconds } : {}),
    ...(body.skip_consent !== undefined ? { skip_consent: body.skip_consent } : {}),
  };
}

export async function findClient(platform: Platform, workspaceId: string, clientId: string): Promise<ClientRow> {
  const row = await platform.store.db
    .selectFrom('connect_clients')
    .selectAll()
    .where('id', '=', clientId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw clientNotFound();
  return row;
}

export async function createClient(platform: Platform, workspaceId: string, body: S['ConnectClientCreate']): Promise<S['ConnectClientWithSecret']> {
  checkRedirectUris(body.redirect_uris);
  const options = clientOptions(undefined, body);
  const type = body.client_type ?? 'confidential';
  const secret = type === 'confidential' ? newClientSecret() : null;
  const now = platform.now();
  const row = await platform.store.db
    .insertInto('connect_clients')
    .values({
      id: newId('cli'),
      workspace_id: workspaceId,
      name: body.name,
      client_type: type,
      redirect_uris: body.redirect_uris,
      secret_prefix: secret?.slice(0, SECRET_PREFIX_LENGTH) ?? null,
      secret_digest: secret ? platform.secrets.digest(secret) : null,
      ...options,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...clientView(row), client_secret: secret };
}

export async function listClients(platform: Platform, workspaceId: string, query: { limit?: number; cursor?: string }): Promise<Page<S['ConnectClient']>> {
  const scope = { workspaceId, operation: 'listConnectClients' };
  const limit = query.limit ?? 20;
  const after = decodeKeyset(platform.secrets, scope, query.cursor);
  let q = platform.store.db.selectFrom('connect_clients').selectAll().where('workspace_id', '=', workspaceId);
  if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, clientView);
}

export async function updateClient(platform: Platform, workspaceId: string, clientId: string, body: S['ConnectClientUpdate']): Promise<S['ConnectClient']> {
  if (body.redirect_uris) checkRedirectUris(body.redirect_uris);
  const options = clientOptions(await findClient(platform, workspaceId, clientId), body);
  const row = await platform.store.db
    .updateTable('connect_clients')
    .set({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.redirect_uris !== undefined ? { redirect_uris: body.redirect_uris } : {}),
      ...options,
      updated_at: platform.now(),
    })
    .where('id', '=', clientId)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw clientNotFound();
  return clientView(row);
}

/** A new secret; the old one is refused from now on (its digest is gone). */
export async function rotateClientSecret(platform: Platform, workspaceId: string, clientId: string): Promise<S['ConnectClientWithSecret']> {
  const current = await findClient(platform, workspaceId, clientId);
  if (current.client_type === 'public') throw new HttpProblem(409, 'conflict', 'Public clients have no secret to rotate.');
  const secret = newClientSecret();
  const row = await platform.store.db
    .updateTable('connect_clients')
    .set({ secret_prefix: secret.slice(0, SECRET_PREFIX_LENGTH), secret_digest: platform.secrets.digest(secret), updated_at: platform.now() })
    .where('id', '=', clientId)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw clientNotFound();
  return { ...clientView(row), client_secret: secret };
}

/** Deletes the client; its grants, codes and tokens go with it (foreign keys cascade). */
export async function deleteClient(platform: Platform, workspaceId: string, clientId: string): Promise<void> {
  const result = await platform.store.db.deleteFrom('connect_clients').where('id', '=', clientId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!result.numDeletedRows) throw clientNotFound();
}

/** The client `client_id` names, in any workspace (clients may be authorized by any workspace's owner). */
export async function clientById(platform: Platform, clientId: string): Promise<ClientRow | undefined> {
  if (!/^cli_[0-9A-Za-z]{1,64}$/.test(clientId)) return undefined;
  return platform.store.db.selectFrom('connect_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
}
