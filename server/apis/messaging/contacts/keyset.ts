// Keyset pagination over any one sort key plus the id, for lists whose order is not just
// "newest first" (names, nullable times). The cursor carries the sort, the last key and id,
// signed and bound to the workspace and operation by lib/cursor.ts; a cursor of another sort
// is refused like any foreign cursor. Time keys are compared at millisecond precision on both
// sides, since rows written with the database's now() hold microseconds a cursor cannot carry.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { decodeCursor, encodeCursor, invalidCursor, type CursorScope, type Page } from '#server/lib/cursor.js';
import type { SecretBox } from '#server/lib/secrets.js';

export interface SortKey {
  /** The sort name bound into the cursor. */
  name: string;
  /** The SQL of the key, e.g. sql`contacts.name`; time keys are truncated to milliseconds. */
  column: string;
  type: 'time' | 'text';
  dir: 'asc' | 'desc';
  /** The id column that breaks ties. */
  id: string;
  /**
   * A time column that is never null and stored at millisecond precision (contacts.created_at):
   * ordered and compared as it is, so an index on (workspace, column, id) serves the page.
   */
  exact?: boolean;
}

export interface Position {
  value: string | Date | null;
  id: string;
}

function keyExpr(key: SortKey): RawBuilder<unknown> {
  return key.type === 'time' && !key.exact ? sql`date_trunc('milliseconds', ${sql.ref(key.column)})` : sql.ref(key.column);
}

/** The key's value for each row, selected under this alias (`select(sortKeySelection(key))`). */
export function sortKeySelection(key: SortKey) {
  return keyExpr(key).as('sort_key');
}

/** ORDER BY the key (nulls last in both directions), then the id the same way. */
export function orderBy(key: SortKey): RawBuilder<unknown> {
  const dir = sql.raw(key.dir);
  if (key.exact) return sql`${keyExpr(key)} ${dir}, ${sql.ref(key.id)} ${dir}`;
  return sql`${keyExpr(key)} ${dir} nulls last, ${sql.ref(key.id)} ${dir}`;
}

/** Rows after the cursor's position, or undefined on the first page. */
export function afterCursor(secrets: SecretBox, scope: CursorScope, key: SortKey, cursor: string | undefined): RawBuilder<SqlBool> | undefined {
  const position = cursorPosition(secrets, scope, key, cursor);
  return position && afterPosition(key, position);
}

/** The position a cursor of this sort carries (its key's value typed), or undefined without one. */
export function cursorPosition(secrets: SecretBox, scope: CursorScope, key: SortKey, cursor: string | undefined): Position | undefined {
  const raw = decodeCursor(secrets, scope, cursor);
  if (!raw) return undefined;
  if (raw.s !== key.name || typeof raw.id !== 'string' || (raw.v !== undefined && typeof raw.v !== 'string')) throw invalidCursor();
  let value: Position['value'] = raw.v ?? null;
  if (value !== null && key.type === 'time') {
    value = new Date(value);
    if (Number.isNaN(value.getTime())) throw invalidCursor();
  }
  if (key.exact && value === null) throw invalidCursor();
  return { value, id: raw.id };
}

/** Rows after `position` in the key's order. */
export function afterPosition(key: SortKey, { value, id: lastId }: Position): RawBuilder<SqlBool> {
  const expr = keyExpr(key);
  const op = sql.raw(key.dir === 'asc' ? '>' : '<');
  const id = sql.ref(key.id);
  if (key.exact) return sql<SqlBool>`((${expr}, ${id}) ${op} (${value}, ${lastId}))`;
  if (value === null) return sql<SqlBool>`(${expr} is null and ${id} ${op} ${lastId})`;
  return sql<SqlBool>`(${expr} ${op} ${value} or (${expr} = ${value} and ${id} ${op} ${lastId}) or ${expr} is null)`;
}

/** One page from rows fetched with `limit + 1` and `sort_key` selected. */
export function sortedPage<Row extends { id: string; sort_key: unknown }, Item>(
  secrets: SecretBox,
  scope: CursorScope,
  key: SortKey,
  rows: Row[],
  limit: number,
  map: (rows: Row[]) => Item[],
): Page<Item> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  let next: string | null = null;
  if (hasMore) {
    const v =
      last.sort_key === null || last.sort_key === undefined ? undefined : last.sort_key instanceof Date ? last.sort_key.toISOString() : String(last.sort_key);
    next = encodeCursor(secrets, scope, { s: key.name, id: last.id, ...(v === undefined ? {} : { v }) });
  }
  return { data: map(items), has_more: hasMore, next_cursor: next };
}

/**
 * Nullable keys on an index: a key with nulls (a contact's name, its last inbound message) is
 * listed as two index ranges instead of one `… or key is null` condition that no index range
 * serves: first the rows with a key, in order, after the cursor; then, when the page is not full,
 * the rows without one by id. One btree on (workspace, key, id) serves both ranges in both
 * directions. The key is compared at full precision: a time key travels in the cursor as the
 * database's own ISO text (`to_json`), so no row is skipped or repeated at microseconds.
 */
export interface NullableRanges {
  /** Condition for the keyed range (`key is not null`, after the cursor's key and id), or null when the cursor is past it. */
  keyed: RawBuilder<SqlBool> | null;
  /** Condition for the null range (`key is null`, after the cursor's id). */
  nulls: RawBuilder<SqlBool>;
  /** ORDER BY of the keyed range, then of the null range. */
  keyedOrder: RawBuilder<unknown>;
  nullsOrder: RawBuilder<unknown>;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)$/;

/** The key's value as the cursor carries it: text as is, times as full-precision ISO text. */
export function nullableKeySelection(key: SortKey) {
  return (key.type === 'time' ? sql`to_json(${sql.ref(key.column)}) #>> '{}'` : sql.ref(key.column)).as('sort_key');
}

export function nullableRanges(secrets: SecretBox, scope: CursorScope, key: SortKey, cursor: string | undefined): NullableRanges {
  const column = sql.ref(key.column);
  const id = sql.ref(key.id);
  const dir = sql.raw(key.dir);
  const op = sql.raw(key.dir === 'asc' ? '>' : '<');
  const ranges: NullableRanges = {
    keyed: sql<SqlBool>`(${column} is not null)`,
    nulls: sql<SqlBool>`(${column} is null)`,
    keyedOrder: sql`${column} ${dir}, ${id} ${dir}`,
    nullsOrder: sql`${id} ${dir}`,
  };
  const raw = decodeCursor(secrets, scope, cursor);
  if (!raw) return ranges;
  if (raw.s !== key.name || typeof raw.id !== 'string' || (raw.v !== undefined && typeof raw.v !== 'string')) throw invalidCursor();
  if (raw.v === undefined) return { ...ranges, keyed: null, nulls: sql<SqlBool>`(${column} is null and ${id} ${op} ${raw.id})` };
  if (key.type === 'time' && !ISO_TIME.test(raw.v)) throw invalidCursor();
  const value = key.type === 'time' ? sql`cast(${raw.v} as timestamptz)` : sql`${raw.v}`;
  return { ...ranges, keyed: sql<SqlBool>`(${column} is not null and (${column}, ${id}) ${op} (${value}, ${raw.id}))` };
}
