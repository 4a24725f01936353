// Tags: labels on contacts, unique per workspace case-insensitively ("VIP" is "vip").
import { sql, type Kysely, type SqlBool } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from './keyset.js';
import { contactCounts } from './counts.js';
import { onIndexes } from './on-indexes.js';
import { isUniqueViolation } from './storable.js';

type Tag = components['schemas']['Tag'];

const BY_NAME: SortKey = { name: 'name', column: 'tags.name', type: 'text', dir: 'asc', id: 'tags.id' };

/**
 * The ids of tags named `names` (case-insensitively), creating those that do not exist yet.
 * Run inside the caller's transaction; a concurrent create of the same name is absorbed.
 */
/** The ids of the workspace's tags named `names`, by lower-cased name; a name with no tag is absent. */
export async function tagIdsByName(db: Kysely<Database>, workspaceId: string, names: string[]): Promise<Map<string, string>> {
  const lower = [...new Set(names.map((n) => n.toLowerCase()))];
  if (!lower.length) return new Map();
  const rows = await db
    .selectFrom('tags')
    .select(['id', 'name'])
    .where('workspace_id', '=', workspaceId)
    .where(sql<SqlBool>`lower(name) in (${sql.join(lower)})`)
    .execute();
  return new Map(rows.map((r) => [r.name.toLowerCase(), r.id]));
}

export async function ensureTags(db: Kysely<Database>, workspaceId: string, names: string[], now: Date): Promise<string[]> {
  const wanted = new Map(names.map((n) => [n.toLowerCase(), n]));
  if (!wanted.size) return [];
  let ids = await tagIdsByName(db, workspaceId, names);
  // In one order (by lower-case name): two writes inserting the same new names in opposite order
  // would each wait for the other's uncommitted name, a deadlock on PostgreSQL.
  const missing = [...wanted]
    .filter(([lower]) => !ids.has(lower))
    .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
    .map(([, name]) => name);
  if (missing.length) {
    await db
      .insertInto('tags')
      .values(missing.map((name) => ({ id: newId('tag'), workspace_id: workspaceId, name, created_at: now })))
      .onConflict((oc) => oc.doNothing())
      .execute();
    ids = await tagIdsByName(db, workspaceId, names);
  }
  return [...ids.values()];
}

const view = (r: { id: string; name: string; color: string | null; created_at: Date; contact_count: number | string | bigint }): Tag => ({
  id: r.id,
  name: r.name,
  color: r.color,
  contact_count: Number(r.contact_count),
  created_at: r.created_at.toISOString(),
});

export const listTags: Handler<operations['listTags']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor }: NonNullable<operations['listTags']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listTags' };
  const after = afterCursor(secrets, scope, BY_NAME, cursor);
  let query = store.db
    .selectFrom('tags')
    .select(['id', 'name', 'color', 'created_at', 'contact_count', 'counted_at', sortKeySelection(BY_NAME)])
    .where('workspace_id', '=', workspaceId);
  if (after) query = query.where(after);
  const rows = await query
    .orderBy(orderBy(BY_NAME))
    .limit(limit + 1)
    .execute();
  const db = store.db;
  // On (tag, contact): an index-only range, however common the tag.
  const counted = (id: string) =>
    onIndexes(db, (trx) =>
      trx
        .selectFrom('contact_tags')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('tag_id', '=', id)
        .executeTakeFirstOrThrow(),
    ).then((r) => Number(r.n));
  const counts = await contactCounts(db, 'tags', workspaceId, rows.slice(0, limit), (id) => counted(id), request.server.platform.now());
  return sortedPage(secrets, scope, BY_NAME, rows, limit, (items) => items.map((r) => view({ ...r, contact_count: counts.get(r.id) ?? 0 })));
};

export const createTag: Handler<operations['createTag']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const body = request.body;
  const duplicate = () => new HttpProblem(409, 'conflict', `Tag ${body.name} already exists.`);
  const existing = await store.db
    .selectFrom('tags')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where(sql<SqlBool>`lower(name) = lower(${body.name})`)
    .executeTakeFirst();
  if (existing) throw duplicate();
  try {
    const row = await store.db
      .insertInto('tags')
      .values({ id: newId('tag'), workspace_id: workspaceId, name: body.name, color: body.color ?? null, created_at: now() })
      .returning(['id', 'name', 'color', 'created_at'])
      .executeTakeFirstOrThrow();
    reply.code(201);
    return view({ ...row, contact_count: 0 });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicate();
    throw error;
  }
};
