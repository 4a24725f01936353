// API key operations, all within the caller's workspace: an id of another workspace answers
// the same 404 as an unknown one. Secrets appear only in the create and rotate answers.
import type { Selectable } from 'kysely';
import type { components, operations } from '#generated/account/types.js';
import { apiKeyVerifier, keyStatus, newApiKeySecret } from '#server/auth/api-keys.js';
import { authOf } from '#server/auth/authenticate.js';
import { retireCredential } from '#server/auth/retired-credentials.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { ApiKeysTable } from '#server/store/schema.js';

type ApiKey = components['schemas']['ApiKey'];
type ApiKeyScope = components['schemas']['ApiKeyScope'];
type ListQuery = NonNullable<operations['listApiKeys']['parameters']['query']>;
type KeyRow = Omit<Selectable<ApiKeysTable>, 'digest'>;

const SCOPES: ApiKeyScope[] = ['messaging:read', 'messaging:write'];
/** Every column but the digest, which never leaves the auth module. */
const COLUMNS = ['id', 'workspace_id', 'name', 'kind', 'scopes', 'prefix', 'created_at', 'last_used_at', 'expires_at', 'revoked_at'] as const;

function keyView(row: KeyRow, now: Date): ApiKey {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    id: row.id,
    name: row.name,
    kind: row.kind as ApiKey['kind'],
    scopes: row.scopes as ApiKeyScope[],
    prefix: row.prefix,
    status: keyStatus(row, now),
    created_at: row.created_at.toISOString(),
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
  };
}

const notFound = () => new HttpProblem(404, 'not-found', 'No API key with this id.');

async function findKey(platform: Platform, workspaceId: string, keyId: string): Promise<KeyRow> {
  const row = await platform.store.db.selectFrom('api_keys').select(COLUMNS).where('id', '=', keyId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export const createApiKey: Handler<operations['createApiKey']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const body = request.body;
  const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  if (expiresAt && expiresAt.getTime() <= now.getTime()) {
    throw new HttpProblem(400, 'validation', 'One field is invalid.', { errors: [{ pointer: '/body/expires_at', detail: 'must be in the future' }] });
  }
  const scopes = SCOPES.filter((s) => (body.scopes ?? SCOPES).includes(s));
  const { secret, prefix, digest } = newApiKeySecret(platform.secrets);
  const row = {
    id: newId('key'),
    workspace_id: workspaceId,
    name: body.name,
    kind: body.kind ?? 'messaging',
    scopes,
    prefix,
    created_at: now, // from JS, millisecond precision, as list cursors expect
    last_used_at: null,
    expires_at: expiresAt,
    revoked_at: null,
  };
  await platform.store.db
    .insertInto('api_keys')
    .values({ ...row, digest })
    .execute();
  // The answer carries the secret (shown once): no cache may keep it (bad-inputs L8).
  reply.code(201).header('cache-control', 'no-store');
  return { ...keyView(row, now), secret };
};

export const listApiKeys: Handler<operations['listApiKeys']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  // The query is optional in the generated types, so Handler's request sees it as `unknown`.
  const { status, limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  const scope = { workspaceId, operation: 'listApiKeys' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = platform.store.db.selectFrom('api_keys').select(COLUMNS).where('workspace_id', '=', workspaceId);
  if (status === 'revoked') query = query.where('revoked_at', 'is not', null);
  if (status === 'active') query = query.where('revoked_at', 'is', null).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  if (status === 'expired') query = query.where('revoked_at', 'is', null).where('expires_at', '<=', now);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, (row) => keyView(row, now));
};

export const getApiKey: Handler<operations['getApiKey']> = async (request) => {
  const { workspaceId } = authOf(request);
  return keyView(await findKey(request.server.platform, workspaceId, request.params.keyId), request.server.platform.now());
};

export const rotateApiKey: Handler<operations['rotateApiKey']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const current = await findKey(request.server.platform, workspaceId, request.params.keyId);
  if (keyStatus(current, now) !== 'active') throw new HttpProblem(409, 'conflict', `This API key is ${keyStatus(current, now)} and cannot be rotated.`);
  const { secret, prefix, digest } = newApiKeySecret(platform.secrets);
  const row = await platform.store.db.transaction().execute(async (tx) => {
    const old = await tx.selectFrom('api_keys').select('digest').where('id', '=', current.id).where('revoked_at', 'is', null).forUpdate().executeTakeFirst();
    if (!old) return undefined; // a revoke racing this rotation wins
    // The old value stays known as retired (server/auth/retired-credentials.ts).
    await retireCredential(tx, old.digest, workspaceId, 'messaging_key', now);
    return tx
      .updateTable('api_keys')
      .set({ prefix, digest })
      .where('id', '=', current.id)
      .where('workspace_id', '=', workspaceId)
      .returning(COLUMNS)
      .executeTakeFirst();
  });
  if (!row) throw new HttpProblem(409, 'conflict', 'This API key is revoked and cannot be rotated.');
  await apiKeyVerifier(platform).invalidate(row.id, workspaceId);
  reply.header('cache-control', 'no-store');
  return { ...keyView(row, now), secret };
};

export const revokeApiKey: Handler<operations['revokeApiKey']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const now = platform.now();
  const current = await findKey(request.server.platform, workspaceId, request.params.keyId);
  if (current.revoked_at) return keyView(current, now); // revoking twice changes nothing
  const row = await platform.store.db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', current.id)
    .where('workspace_id', '=', workspaceId)
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
  await apiKeyVerifier(platform).invalidate(row.id, workspaceId);
  return keyView(row, now);
};
