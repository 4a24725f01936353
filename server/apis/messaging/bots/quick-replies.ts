// Quick replies: canned answers agents insert in the inbox by typing `/shortcut`. Listed by
// shortcut; the shortcut is unique per workspace (409), enforced by the database so two
// concurrent creates cannot both win.
import { sql, type Selectable } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeCursor, encodeCursor, invalidCursor } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { QuickRepliesTable } from '#server/store/schema/bots.js';

type Row = Selectable<QuickRepliesTable>;

const view = (row: Row): components['schemas']['QuickReply'] => ({
  id: row.id,
  shortcut: row.shortcut,
  title: row.title,
  text: row.text,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

export const createQuickReply: Handler<operations['createQuickReply']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { shortcut, title, text } = request.body;
  const now = platform.now();
  const row = await platform.store.db
    .insertInto('quick_replies')
    .values({ id: newId('qr'), workspace_id: workspaceId, shortcut, title: title ?? null, text, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'shortcut']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) {
    throw new HttpProblem(409, 'conflict', `A quick reply with the shortcut '${shortcut}' already exists.`, {
      errors: [{ pointer: '/body/shortcut', detail: 'already used in this workspace' }],
    });
  }
  reply.code(201);
  return view(row);
};

export const listQuickReplies: Handler<operations['listQuickReplies']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { search, limit = 20, cursor } = (request.query ?? {}) as NonNullable<operations['listQuickReplies']['parameters']['query']>;
  const scope = { workspaceId, operation: 'listQuickReplies' };
  const position = decodeCursor(platform.secrets, scope, cursor);
  if (position && typeof position.s !== 'string') throw invalidCursor();
  let query = platform.store.db.selectFrom('quick_replies').selectAll().where('workspace_id', '=', workspaceId);
  // A literal prefix (no LIKE, so `_` and `%` in the search mean themselves); shortcuts are lower case.
  if (search) query = query.where(sql<string>`left(shortcut, ${search.length})`, '=', search.toLowerCase());
  if (position) query = query.where('shortcut', '>', String(position.s));
  const rows = await query
    .orderBy('shortcut')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit);
  const more = rows.length > limit;
  return {
    data: items.map(view),
    has_more: more,
    next_cursor: more ? encodeCursor(platform.secrets, scope, { s: items.at(-1)!.shortcut }) : null,
  };
};
