// Grants: an owner's consent for one client in their workspace. One active grant per
// (workspace, client); consenting again replaces its scopes. Revoking a grant revokes every
// token issued under it and retires its unexchanged codes. A grant also ends when refresh-token
// reuse or the client's own revocation leaves it no live token. A new grant sends
// `grant.created` and an ended one `grant.revoked`, to the client's own webhook endpoints.
import { sql, type Selectable, type Transaction } from 'kysely';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import type { Database } from '#server/store/schema.js';
import type { components } from '#generated/connect/types.js';
import { decodeKeyset, keysetPage, type Page } from '#server/lib/cursor.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { ConnectGrantsTable } from '#server/store/schema/connect-oauth.js';
import { orderScopes, revokeGrantTokens } from './tokens.js';

type S = components['schemas'];
type GrantRow = Selectable<ConnectGrantsTable> & { client_name: string };
type Tx = Transaction<Database>;

/** Why a grant ended (`grant.revoked`'s `reason`). */
export type GrantEndReason = 'owner_revoked' | 'refresh_token_reuse' | 'client_revoked';

/** The grant as `grant.created` and `grant.revoked` carry it (spec/webhooks/connect.tsp EventGrant). */
function eventGrant(row: Selectable<ConnectGrantsTable>) {
  return {
    id: row.id,
    client_id: row.client_id,
    scopes: orderScopes(row.scopes),
    status: row.status,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

/** Sends `grant.created` or `grant.revoked` about `row` to its client's endpoints. */
async function emitGrantEvent(tx: Tx, row: Selectable<ConnectGrantsTable>, type: 'grant.created' | 'grant.revoked', now: Date, reason?: GrantEndReason) {
  const data = { grant: eventGrant(row), ...(reason ? { reason } : {}) };
  await emitEvent(tx, { workspaceId: row.workspace_id, api: 'connect', type, data, at: now, grant: { id: row.id, clientId: row.client_id } });
}

/**
 * Ends an active grant: revoked with its reason, every token revoked, unexchanged codes retired,
 * `grant.revoked` sent. A grant already ended is left as it is (answers false).
 */
export async function endGrant(tx: Tx, grantId: string, reason: GrantEndReason, now: Date): Promise<boolean> {
  const row = await tx
    .updateTable('connect_grants')
    .set({ status: 'revoked', revoked_at: now, updated_at: now, revoke_reason: reason })
    .where('id', '=', grantId)
    .where('status', '=', 'active')
    .returningAll()
    .executeTakeFirst();
  if (!row) return false;
  await revokeGrantTokens(tx, grantId, now);
  await tx.updateTable('connect_codes').set({ used_at: now }).where('grant_id', '=', grantId).where('used_at', 'is', null).execute();
  await emitGrantEvent(tx, row, 'grant.revoked', now, reason);
  return true;
}

/**
 * After a token family was revoked (reuse, or the client's revocation): ends the grant when
 * nothing of it can act any more, no live refresh token and no code left to exchange. Another
 * consent's chain of the same grant keeps it alive.
 */
export async function endGrantIfIdle(tx: Tx, grantId: string, reason: GrantEndReason, now: Date): Promise<void> {
  const live = await tx
    .selectFrom('connect_tokens')
    .select('id')
    .where('grant_id', '=', grantId)
    .where('kind', '=', 'refresh')
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (live) return;
  const code = await tx
    .selectFrom('connect_codes')
    .select('id')
    .where('grant_id', '=', grantId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (code) return;
  await endGrant(tx, grantId, reason, now);
}

const grantNotFound = () => new HttpProblem(404, 'not-found', 'No grant with this id.');

function grantView(row: GrantRow): S['Grant'] {
  return {
    id: row.id,
    client_id: row.client_id,
    client_name: row.client_name,
    scopes: orderScopes(row.scopes) as S['ConnectScope'][],
    status: row.status,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

function grantsOf(platform: Platform, workspaceId: string) {
  return platform.store.db
    .selectFrom('connect_grants as g')
    .innerJoin('connect_clients as c', 'c.id', 'g.client_id')
    .selectAll('g')
    .select('c.name as client_name')
    .where('g.workspace_id', '=', workspaceId);
}

export async function listGrants(
  platform: Platform,
  workspaceId: string,
  query: { client_id?: string; status?: 'active' | 'revoked'; limit?: number; cursor?: string },
): Promise<Page<S['Grant']>> {
  const scope = { workspaceId, operation: 'listGrants' };
  const limit = query.limit ?? 20;
  const after = decodeKeyset(platform.secrets, scope, query.cursor);
  if (query.client_id) {
    // A client is known here if this workspace registered it or consented to it.
    const known = await platform.store.db
      .selectFrom('connect_clients')
      .select('id')
      .where('id', '=', query.client_id)
      .where((eb) =>
        eb.or([
          eb('workspace_id', '=', workspaceId),
          eb.exists(eb.selectFrom('connect_grants').select('id').where('client_id', '=', query.client_id!).where('workspace_id', '=', workspaceId)),
        ]),
      )
      .executeTakeFirst();
    if (!known) throw new HttpProblem(404, 'not-found', 'No Connect client with this id.');
  }
  let q = grantsOf(platform, workspaceId);
  if (query.client_id) q = q.where('g.client_id', '=', query.client_id);
  if (query.status) q = q.where('g.status', '=', query.status);
  if (after) q = q.where((eb) => eb(eb.refTuple('g.created_at', 'g.id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await q
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, grantView);
}

export async function revokeGrant(platform: Platform, workspaceId: string, grantId: string): Promise<S['Grant']> {
  const now = platform.now();
  await platform.store.db.transaction().execute(async (tx) => {
    const grant = await tx
      .selectFrom('connect_grants')
      .select(['id', 'status'])
      .where('id', '=', grantId)
      .where('workspace_id', '=', workspaceId)
      .forUpdate()
      .executeTakeFirst();
    if (!grant) throw grantNotFound();
    if (grant.status === 'revoked') return; // revoking again changes nothing
    await endGrant(tx, grantId, 'owner_revoked', now);
  });
  const row = await grantsOf(platform, workspaceId).where('g.id', '=', grantId).executeTakeFirst();
  if (!row) throw grantNotFound();
  return grantView(row);
}

/** The active grant of (workspace, client) with `scopes`, created or updated (consent). */
export async function upsertGrant(
  platform: Platform,
  input: { workspaceId: string; clientId: string; ownerId: string; scopes: string[] },
): Promise<{ id: string; workspace_id: string; client_id: string }> {
  const now = platform.now();
  const scopes = orderScopes(input.scopes);
  return platform.store.db.transaction().execute(async (tx) => {
    // `xmax = 0` tells a row just inserted from one updated by the conflict clause.
    const result = await sql<Selectable<ConnectGrantsTable> & { inserted: boolean }>`
      insert into connect_grants (id, workspace_id, client_id, owner_id, scopes, status, created_at, updated_at)
      values (${newId('grt')}, ${input.workspaceId}, ${input.clientId}, ${input.ownerId}, ${sql.val(scopes)}::text[], 'active', ${now}, ${now})
      on conflict (workspace_id, client_id) where status = 'active'
      do update set scopes = excluded.scopes, owner_id = excluded.owner_id, updated_at = excluded.updated_at
      returning *, (xmax = 0) as inserted`.execute(tx);
    const row = result.rows[0]!;
    if (row.inserted) await emitGrantEvent(tx, row, 'grant.created', now);
    return { id: row.id, workspace_id: row.workspace_id, client_id: row.client_id };
  });
}
