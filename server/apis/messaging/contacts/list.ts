// GET /api/contacts: search, tag, segment and custom-field filters (combined with AND), five
// sort orders, keyset pagination. Search text and filter values are bind parameters and LIKE
// patterns are escaped, so `%`, `_`, `'` and `\` are plain characters (bad-inputs J1).
import { sql, type SqlBool } from 'kysely';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { loadFieldDefinitions } from './custom-values.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from './keyset.js';
import { segmentCondition, type FieldDefinitions } from './segment-filter.js';
import { likeContains } from './sql-text.js';
import { CONTACT_COLUMNS, TAG_NAMES, contactViews } from './views.js';

type Query = NonNullable<operations['listContacts']['parameters']['query']>;
type Sort = NonNullable<Query['sort']>;

const SORTS: Record<Sort, SortKey> = {
  '-created_at': { name: '-created_at', column: 'contacts.created_at', type: 'time', dir: 'desc', id: 'contacts.id', exact: true },
  created_at: { name: 'created_at', column: 'contacts.created_at', type: 'time', dir: 'asc', id: 'contacts.id', exact: true },
  name: { name: 'name', column: 'contacts.name', type: 'text', dir: 'asc', id: 'contacts.id' },
  '-name': { name: '-name', column: 'contacts.name', type: 'text', dir: 'desc', id: 'contacts.id' },
  '-last_inbound_at': { name: '-last_inbound_at', column: 'contacts.last_inbound_at', type: 'time', dir: 'desc', id: 'contacts.id' },
};

/** `q` in name, email or number; a number typed with spaces or dashes also matches its digits. */
function searchCondition(q: string) {
  const pattern = likeContains(q);
  const parts = [sql<SqlBool>`contacts.name ilike ${pattern}`, sql<SqlBool>`contacts.email ilike ${pattern}`, sql<SqlBool>`contacts.phone like ${pattern}`];
  const digits = q.replace(/[\s().-]/g, '');
  if (digits !== q && /^\+?\d{3,}$/.test(digits)) parts.push(sql<SqlBool>`contacts.phone like ${likeContains(digits)}`);
  return sql<SqlBool>`(${sql.join(parts, sql` or `)})`;
}

/** `key:value` against the field's type: text case-insensitively, numbers numerically, dates and choices exactly. */
function customFieldCondition(filter: string, index: number, fields: FieldDefinitions) {
  const at = `/query/custom_field/${index}`;
  const colon = filter.indexOf(':');
  const key = filter.slice(0, colon);
  const value = filter.slice(colon + 1);
  const field = fields.get(key);
  if (!field)
    throw new HttpProblem(400, 'validation', `There is no custom field ${key}.`, {
      errors: [{ pointer: at, detail: 'names no custom field of this workspace' }],
    });
  const column = sql`(contacts.custom_fields ->> ${key})`;
  switch (field.type) {
    case 'number': {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n))
        throw new HttpProblem(400, 'validation', `Custom field ${key} holds numbers.`, { errors: [{ pointer: at, detail: 'the value must be a number' }] });
      return sql<SqlBool>`(jsonb_typeof(contacts.custom_fields -> ${key}) = 'number' and cast(contacts.custom_fields ->> ${key} as numeric) = cast(${n} as numeric))`;
    }
    case 'text':
      return sql<SqlBool>`(lower(${column}) = lower(${value}))`;
    default:
      return sql<SqlBool>`(${column} = ${value})`;
  }
}

export const listContacts: Handler<operations['listContacts']> = async (request, _reply) => {
  const { workspaceId } = authOf(request);
  const { secrets, store, now } = request.server.platform;
  const db = store.db;
  const query: Query = request.query ?? {};
  const { limit = 20, cursor, q, tag = [], segment_id, custom_field = [], sort = '-created_at' } = query;
  const key = SORTS[sort];
  // Filters are part of the scope: a cursor only continues the listing it came from.
  const scope = { workspaceId, operation: `listContacts:${JSON.stringify([q ?? null, [...tag].sort(), segment_id ?? null, [...custom_field].sort()])}` };
  const after = afterCursor(secrets, scope, key, cursor);

  let select = db
    .selectFrom('contacts')
    .select([...CONTACT_COLUMNS.map((c) => `contacts.${c}` as const), sortKeySelection(key), TAG_NAMES.as('tags')])
    .where('contacts.workspace_id', '=', workspaceId);
  if (q !== undefined) select = select.where(searchCondition(q));
  for (const name of new Set(tag.map((t) => t.toLowerCase()))) {
    select = select.where(
      sql<SqlBool>`exists (select 1 from contact_tags ct join tags t on t.id = ct.tag_id where ct.contact_id = contacts.id and t.workspace_id = ${workspaceId} and lower(t.name) = ${name})`,
    );
  }
  const needFields = segment_id !== undefined || custom_field.length > 0;
  const fields = needFields ? await loadFieldDefinitions(db, workspaceId) : new Map();
  custom_field.forEach((f, i) => (select = select.where(customFieldCondition(f, i, fields))));
  if (segment_id !== undefined) {
    const segment = await db.selectFrom('segments').select('filter').where('workspace_id', '=', workspaceId).where('id', '=', segment_id).executeTakeFirst();
    if (!segment) throw new HttpProblem(404, 'not-found', `No segment ${segment_id} in this workspace.`);
    select = select.where(segmentCondition(segment.filter, fields));
  }
  if (after) select = select.where(after);
  const rows = await select
    .orderBy(orderBy(key))
    .limit(limit + 1)
    .execute();
  const page = sortedPage(secrets, scope, key, rows, limit, (items) => items);
  return { ...page, data: await contactViews(db, page.data, now()) };
};
