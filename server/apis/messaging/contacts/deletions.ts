// Deleting tags, segments and custom fields: 404 for another workspace's or an unknown id, 409
// while something still uses it (usage.ts). A tag leaves its contacts (contact_tags cascade); a
// custom field's values leave every contact of the workspace in the same transaction.
import { sql } from 'kysely';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { customFieldUser, inUse, segmentUser, tagUser } from './usage.js';

const notFound = (what: string, id: string) => new HttpProblem(404, 'not-found', `No ${what} ${id} in this workspace.`);

export const deleteTag: Handler<operations['deleteTag']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  const { id } = request.params;
  const tag = await db.selectFrom('tags').select(['id', 'name']).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  if (!tag) throw notFound('tag', id);
  const user = await tagUser(db, workspaceId, tag);
  if (user) throw inUse(`Tag ${tag.name}`, user);
  await db.deleteFrom('tags').where('workspace_id', '=', workspaceId).where('id', '=', id).execute();
  return reply.code(204).send();
};

export const deleteSegment: Handler<operations['deleteSegment']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  const { id } = request.params;
  const segment = await db.selectFrom('segments').select('id').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  if (!segment) throw notFound('segment', id);
  const user = await segmentUser(db, workspaceId, id);
  if (user) throw inUse(`Segment ${id}`, user);
  await db.deleteFrom('segments').where('workspace_id', '=', workspaceId).where('id', '=', id).execute();
  return reply.code(204).send();
};

export const deleteCustomField: Handler<operations['deleteCustomField']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  const { id } = request.params;
  const field = await db.selectFrom('custom_fields').select(['id', 'key']).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  if (!field) throw notFound('custom field', id);
  const user = await customFieldUser(db, workspaceId, field.key);
  if (user) throw inUse(`Custom field ${field.key}`, user);
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('custom_fields').where('id', '=', id).execute();
    await trx
      .updateTable('contacts')
      .set({ custom_fields: sql`custom_fields - ${field.key}` as never })
      .where('workspace_id', '=', workspaceId)
      .where(sql`(custom_fields ->> ${field.key}) is not null` as never)
      .execute();
  });
  return reply.code(204).send();
};
