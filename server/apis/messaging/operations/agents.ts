// Agents: the workspace members who take chats. Members are the `owners` rows of the workspace
// (the account API creates them); role `owner` or `agent` may take chats, and chat assignment
// (POST /api/chatapp/assign-chat) accepts exactly these ids. Every stored member is active:
// there is no invitation or disabling yet, so `invited` and `disabled` list nobody.
import { sql } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from '../contacts/keyset.js';

type Agent = components['schemas']['Agent'];

export const AGENT_ROLES = ['owner', 'agent'];

const BY_NAME: SortKey = { name: 'name', column: 'owners.name', type: 'text', dir: 'asc', id: 'owners.id' };

export const listAgents: Handler<operations['listAgents']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor, status }: NonNullable<operations['listAgents']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listAgents' };
  const after = afterCursor(secrets, scope, BY_NAME, cursor);
  if (status !== undefined && status !== 'active') return { data: [], has_more: false, next_cursor: null };
  // Open chats: assigned to the member (the inbox has no resolved state yet).
  const openChats = sql<string>`(select count(*) from chats where chats.workspace_id = owners.workspace_id and chats.assigned_owner_id = owners.id)`.as(
    'open_chats',
  );
  let query = store.db
    .selectFrom('owners')
    .select(['owners.id', 'owners.name', 'owners.email', 'owners.available', 'owners.created_at', openChats, sortKeySelection(BY_NAME)])
    .where('owners.workspace_id', '=', workspaceId)
    .where('owners.role', 'in', AGENT_ROLES);
  if (after) query = query.where(after);
  const rows = await query
    .orderBy(orderBy(BY_NAME))
    .limit(limit + 1)
    .execute();
  return sortedPage(secrets, scope, BY_NAME, rows, limit, (items) =>
    items.map(
      (r): Agent => ({
        id: r.id,
        name: r.name,
        email: r.email,
        status: 'active',
        available: r.available,
        open_chats: Number(r.open_chats),
        // Owner sessions are stateless JWTs: nothing records activity yet.
        last_seen_at: null,
        created_at: new Date(r.created_at).toISOString(),
      }),
    ),
  );
};
