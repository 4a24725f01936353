// GET /api/contacts: search, tag, segment and custom-field filters (combined with AND), five
// sort orders, keyset pagination. Search text and filter values are bind parameters and LIKE
// patterns are escaped, so `%`, `_`, `'` and `\` are plain characters (bad-inputs J1).
// Each sort and filter is served by an index (migration 037, docs/scale.md): the sorts by
// (workspace, key, id), the search by trigram indexes, tags by (tag, contact), custom fields by
// a GIN index over their lower-cased values.
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { operations } from '#generated/messaging/types.js';
import type { Database } from '#server/store/schema.js';
import type { SegmentFilterRow } from '#server/store/schema/messaging-crm.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { loadFieldDefinitions } from './custom-values.js';
import { prepared, type PreparedQuery } from '#server/store/prepared.js';
import {
  afterCursor,
  afterPosition,
  cursorPosition,
  nullableKeySelection,
  nullableRanges,
  orderBy,
  sortedPage,
  sortKeySelection,
  type SortKey,
} from './keyset.js';
import { customFieldsContain, segmentCondition, segmentContext, type FieldDefinitions, type SegmentContext } from './segment-filter.js';
import { onIndexes, readPage } from './on-indexes.js';
import { ilikeContains } from './sql-text.js';
import { tagIdsByName } from './tags.js';
import { CONTACT_COLUMNS, TAG_NAMES, contactViews, type ContactRow } from './views.js';

type Query = NonNullable<operations['listContacts']['parameters']['query']>;
type Sort = NonNullable<Query['sort']>;

const SORTS: Record<Sort, SortKey> = {
  '-created_at': { name: '-created_at', column: 'contacts.created_at', type: 'time', dir: 'desc', id: 'contacts.id', exact: true },
  created_at: { name: 'created_at', column: 'contacts.created_at', type: 'time', dir: 'asc', id: 'contacts.id', exact: true },
  name: { name: 'name', column: 'contacts.name', type: 'text', dir: 'asc', id: 'contacts.id' },
  '-name': { name: '-name', column: 'contacts.name', type: 'text', dir: 'desc', id: 'contacts.id' },
  '-last_inbound_at': { name: '-last_inbound_at', column: 'contacts.last_inbound_at', type: 'time', dir: 'desc', id: 'contacts.id' },
};

/** Up to this many search matches are fetched by id and sorted; more are found along the sort's index. */
const SPARSE_MATCHES = 1_000;
/**
 * The same for a segment, whose members are found on a tag's entries or a value's: reading a few
 * thousand of them and sorting costs less than walking the sort's index past the contacts that
 * are not members (a page of 20 members of 1,000 in a million reads 20,000 contacts).
 */
const SPARSE_SEGMENT_MATCHES = 5_000;

/** How many contacts, in the sort's order, are read for a page of common matches before probing for rare ones. */
const WALK_BUDGET = 2_000;

/**
 * The page's rows among the first WALK_BUDGET contacts after the cursor, in the order of an exact
 * key (the index on (workspace, key, id) reads them, and stops once a page is found): a full page
 * when the matches are common, whatever the workspace's size.
 */
async function denseWalk(
  db: Kysely<Database>,
  key: SortKey,
  workspaceId: string,
  after: RawBuilder<SqlBool> | undefined,
  conditions: RawBuilder<SqlBool>[],
  limit: number,
) {
  let window = db.selectFrom('contacts').selectAll().where('contacts.workspace_id', '=', workspaceId);
  if (after) window = window.where(after);
  let select = db
    .selectFrom(window.orderBy(orderBy(key)).limit(WALK_BUDGET).as('contacts'))
    .select([...CONTACT_COLUMNS.map((c) => `contacts.${c}` as const), sortKeySelection(key), TAG_NAMES.as('tags')]);
  for (const condition of conditions) select = select.where(condition);
  return select
    .orderBy(orderBy(key))
    .limit(limit + 1)
    .execute();
}

/**
 * `q` in name, email or number; a number typed with spaces or dashes also matches its digits.
 * Each branch is a trigram index (name, email, phone), so a fragment found nowhere costs a few
 * index pages, not a pass over the workspace.
 */
function searchCondition(q: string) {
  const parts = [ilikeContains(sql.ref('contacts.name'), q), ilikeContains(sql.ref('contacts.email'), q)];
  // A stored number is `+` and digits: only text of those can be part of one.
  const digits = q.replace(/[\s().-]/g, '');
  if (/^\+?\d+$/.test(q)) parts.push(ilikeContains(sql.ref('contacts.phone'), q, 'like'));
  else if (/^\+?\d{3,}$/.test(digits)) parts.push(ilikeContains(sql.ref('contacts.phone'), digits, 'like'));
  return sql<SqlBool>`(${sql.join(parts, sql` or `)})`;
}

/** `key:value` against the field's type: text case-insensitively, numbers numerically, dates and choices exactly. */
function customFieldCondition(filter: string, index: number, fields: FieldDefinitions, indexed: boolean) {
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
  // The GIN index's containment, to find a few matches; the exact comparison alone, to check rows read in order.
  const contain = (value: string | number) => (indexed ? customFieldsContain(key, value) : sql<SqlBool>`true`);
  switch (field.type) {
    case 'number': {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n))
        throw new HttpProblem(400, 'validation', `Custom field ${key} holds numbers.`, { errors: [{ pointer: at, detail: 'the value must be a number' }] });
      return sql<SqlBool>`(${contain(n)} and jsonb_typeof(contacts.custom_fields -> ${key}) = 'number' and cast(contacts.custom_fields ->> ${key} as numeric) = cast(${n} as numeric))`;
    }
    case 'text':
      return sql<SqlBool>`(${contain(value)} and lower(${column}) = lower(${value}))`;
    default:
      return sql<SqlBool>`(${contain(value)} and ${column} = ${value})`;
  }
}

/** A page's columns (with the sort key and the tag names) from the workspace's contacts. */
function pageSelect(db: Kysely<Database>, key: SortKey, workspaceId: string) {
  return db
    .selectFrom('contacts')
    .select([...CONTACT_COLUMNS.map((c) => `contacts.${c}` as const), key.exact ? sortKeySelection(key) : nullableKeySelection(key), TAG_NAMES.as('tags')])
    .where('contacts.workspace_id', '=', workspaceId);
}

type PlainPageValues = { workspaceId: string; afterValue?: unknown; afterId?: string };
type PlainPageRow = ContactRow & { sort_key: unknown; tags: string[] };

/**
 * The everyday listing, with no filter and an exact sort (newest or oldest first), is built once
 * per sort, kind of page and page size (#server/store/prepared.ts; at most 2 × 2 × the contract's
 * largest `limit`): its SQL is the one built below otherwise, the LIMIT written in the text
 * (#server/store/inline-limits.ts).
 */
const plainPages = new Map<string, PreparedQuery<PlainPageValues, PlainPageRow>>();
function plainPage(key: SortKey, continued: boolean, limit: number): PreparedQuery<PlainPageValues, PlainPageRow> {
  const name = `${key.name} ${continued} ${limit}`;
  let query = plainPages.get(name);
  if (!query) {
    query = prepared((db, v: PlainPageValues) => {
      let select = pageSelect(db, key, v.workspaceId);
      if (continued) select = select.where(afterPosition(key, { value: v.afterValue as Date, id: v.afterId! }));
      return select.orderBy(orderBy(key)).limit(limit);
    });
    plainPages.set(name, query);
  }
  return query;
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

  if (key.exact && q === undefined && !tag.length && segment_id === undefined && !custom_field.length) {
    const position = cursorPosition(secrets, scope, key, cursor);
    const values = { workspaceId, ...(position && { afterValue: position.value, afterId: position.id }) };
    const rows = await plainPage(key, position !== undefined, limit + 1).execute(db, values);
    const page = sortedPage(secrets, scope, key, rows, limit, (items) => items);
    return { ...page, data: await contactViews(db, page.data, now()) };
  }
  // A key with nulls is read as two index ranges (keyset.ts); created_at has none.
  const ranges = key.exact ? undefined : nullableRanges(secrets, scope, key, cursor);
  const after = key.exact ? afterCursor(secrets, scope, key, cursor) : undefined;

  let select = pageSelect(db, key, workspaceId);
  const needFields = segment_id !== undefined || custom_field.length > 0;
  const fields = needFields ? await loadFieldDefinitions(db, workspaceId) : new Map();
  let segment: { filter: SegmentFilterRow; context: SegmentContext } | undefined;
  if (segment_id !== undefined) {
    const row = await db.selectFrom('segments').select('filter').where('workspace_id', '=', workspaceId).where('id', '=', segment_id).executeTakeFirst();
    if (!row) throw new HttpProblem(404, 'not-found', `No segment ${segment_id} in this workspace.`);
    segment = { filter: row.filter, context: await segmentContext(db, workspaceId, [row.filter], fields) };
  }
  // The exact conditions of the search, custom-field and segment filters (an unknown field: 400).
  const exact = [
    ...(q !== undefined ? [searchCondition(q)] : []),
    ...custom_field.map((f, i) => customFieldCondition(f, i, fields, false)),
    ...(segment ? [segmentCondition(segment.filter, segment.context)] : []),
  ];
  // Tag names become ids first (one small read), so each filter is a lookup of (tag, contact).
  const tagged: RawBuilder<SqlBool>[] = [];
  const names = [...new Set(tag.map((t) => t.toLowerCase()))];
  const tagIds = await tagIdsByName(db, workspaceId, names);
  if (tagIds.size < names.length) return { data: [], has_more: false, next_cursor: null };
  for (const id of tagIds.values()) tagged.push(sql<SqlBool>`exists (select 1 from contact_tags ct where ct.contact_id = contacts.id and ct.tag_id = ${id})`);
  let walking = false;
  if (exact.length) {
    // Common matches (a frequent surname, a city) fill a page among the first contacts in the
    // sort's order: those are read first, at most WALK_BUDGET of them, before any probe.
    if (key.exact) {
      const rows = await denseWalk(db, key, workspaceId, after, [...exact, ...tagged], limit);
      if (rows.length > limit) {
        const page = sortedPage(secrets, scope, key, rows, limit, (items) => items);
        return { ...page, data: await contactViews(db, page.data, now()) };
      }
    }
    // The matches of the search, custom-field and segment filters are found first, on their
    // trigram and GIN indexes: a few (a name, a number, a rare value) are then fetched by id and
    // sorted; many are found soonest by walking the sort's own index with the exact conditions.
    // One statement would leave that choice to estimates, and a fragment found nowhere estimated
    // as common walks the whole workspace (or a common value estimated as rare sorts all of its rows).
    const sparse = segment ? SPARSE_SEGMENT_MATCHES : SPARSE_MATCHES;
    const matches = await onIndexes(db, (trx) => {
      let probe = trx.selectFrom('contacts').select('id').where('workspace_id', '=', workspaceId);
      if (q !== undefined) probe = probe.where(searchCondition(q));
      custom_field.forEach((f, i) => (probe = probe.where(customFieldCondition(f, i, fields, true))));
      if (segment) probe = probe.where(segmentCondition(segment.filter, segment.context, { indexed: true }));
      return probe.limit(sparse + 1).execute();
    });
    if (matches.length <= sparse) select = select.where(sql<SqlBool>`contacts.id = any(${matches.map((m) => m.id)}::text[])`);
    else {
      for (const condition of exact) select = select.where(condition);
      walking = true;
    }
  }
  for (const condition of tagged) select = select.where(condition);
  const rows = await readPage(db, walking || tagged.length > 0, async (read) => {
    if (!ranges) return read((after ? select.where(after) : select).orderBy(orderBy(key)).limit(limit + 1));
    const keyed = ranges.keyed
      ? await read(
          select
            .where(ranges.keyed)
            .orderBy(ranges.keyedOrder)
            .limit(limit + 1),
        )
      : [];
    if (keyed.length > limit) return keyed;
    return [
      ...keyed,
      ...(await read(
        select
          .where(ranges.nulls)
          .orderBy(ranges.nullsOrder)
          .limit(limit + 1 - keyed.length),
      )),
    ];
  });
  const page = sortedPage(secrets, scope, key, rows, limit, (items) => items);
  return { ...page, data: await contactViews(db, page.data, now()) };
};
