// Segments: saved contact filters. The filter is checked against the workspace's custom fields
// when saved (422 naming the condition); `contact_count` is counted live at every read in a
// workspace of up to 10,000 contacts, and kept for a while in a larger one (counts.ts), so a list
// of segments of a large workspace does not count all of its contacts each time.
import { sql, type Kysely, type Selectable, type SqlBool } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import type { SegmentFilterRow, SegmentsTable } from '#server/store/schema/messaging-crm.js';
import { loadFieldDefinitions } from './custom-values.js';
import { contactCounts } from './counts.js';
import { onIndexes } from './on-indexes.js';
import { checkSegmentFilter, segmentCondition, segmentContext } from './segment-filter.js';
import { isUniqueViolation } from './storable.js';

type Segment = components['schemas']['Segment'];

async function views(db: Kysely<Database>, workspaceId: string, rows: Selectable<SegmentsTable>[], now: Date): Promise<Segment[]> {
  if (!rows.length) return [];
  const context = await segmentContext(
    db,
    workspaceId,
    rows.map((r) => r.filter),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  // Counted on indexes: a rare tag or value drives the count from its own entries.
  const counted = async (id: string) => {
    const { n } = await onIndexes(db, (trx) =>
      trx
        .selectFrom('contacts')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('contacts.workspace_id', '=', workspaceId)
        .where(segmentCondition(byId.get(id)!.filter, context))
        .executeTakeFirstOrThrow(),
    );
    return Number(n);
  };
  const counts = await contactCounts(db, 'segments', workspaceId, rows, counted, now);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description,
    filter: r.filter as Segment['filter'],
    contact_count: counts.get(r.id) ?? 0,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  }));
}

export const listSegments: Handler<operations['listSegments']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor }: NonNullable<operations['listSegments']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listSegments' };
  const after = decodeKeyset(secrets, scope, cursor);
  let query = store.db.selectFrom('segments').selectAll().where('workspace_id', '=', workspaceId);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = keysetPage(secrets, scope, rows, limit, (r) => r);
  return { ...page, data: await views(store.db, workspaceId, page.data, request.server.platform.now()) };
};

export const createSegment: Handler<operations['createSegment']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const db = store.db;
  const body = request.body;
  const filter = body.filter as SegmentFilterRow;
  checkSegmentFilter(filter, await loadFieldDefinitions(db, workspaceId));
  const duplicate = () =>
    new HttpProblem(409, 'conflict', `Segment ${body.name} already exists.`, { errors: [{ pointer: '/body/name', detail: 'is the name of another segment' }] });
  const existing = await db
    .selectFrom('segments')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where(sql<SqlBool>`lower(name) = lower(${body.name})`)
    .executeTakeFirst();
  if (existing) throw duplicate();
  const at = now();
  try {
    const row = await db
      .insertInto('segments')
      .values({
        id: newId('seg'),
        workspace_id: workspaceId,
        name: body.name,
        description: body.description ?? null,
        filter: JSON.stringify(filter),
        created_at: at,
        updated_at: at,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    reply.code(201);
    return (await views(db, workspaceId, [row], at))[0]!;
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicate();
    throw error;
  }
};
