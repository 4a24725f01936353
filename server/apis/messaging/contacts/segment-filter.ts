// Segment filters: checked once when saved (422 naming the condition), then compiled to SQL over
// `contacts` each time a segment is read, listed or used as an audience, so membership is live.
// Values always travel as bind parameters; custom field keys too (`custom_fields->>$1`).
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import type { CustomFieldType, SegmentConditionRow, SegmentFilterRow } from '#server/store/schema/messaging-crm.js';
import { ilikeContains, likeContains } from './sql-text.js';
import { tagIdsByName } from './tags.js';

type Kind = 'text' | 'phone' | 'tag' | 'timestamp' | CustomFieldType;

const OPERATORS: Record<Kind, readonly string[]> = {
  text: ['eq', 'neq', 'contains', 'not_contains', 'exists', 'not_exists'],
  phone: ['eq', 'neq', 'contains', 'not_contains', 'exists', 'not_exists'],
  choice: ['eq', 'neq', 'exists', 'not_exists'],
  tag: ['eq', 'neq', 'exists', 'not_exists'],
  number: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'],
  date: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'within_days', 'exists', 'not_exists'],
  timestamp: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'within_days', 'exists', 'not_exists'],
};

const BUILT_IN: Record<string, Kind> = { name: 'text', email: 'text', contact_no: 'phone', tag: 'tag', created_at: 'timestamp', last_inbound_at: 'timestamp' };

/** The custom fields of a workspace, by key: what a filter may name and how its values compare. */
export type FieldDefinitions = Map<string, { type: CustomFieldType; options: string[] | null }>;

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A calendar date `YYYY-MM-DD` that exists (no 2026-02-30). */
export function isCalendarDate(value: string): boolean {
  if (!DATE.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

export async function loadFieldDefinitions(db: Kysely<Database>, workspaceId: string): Promise<FieldDefinitions> {
  const rows = await db.selectFrom('custom_fields').select(['key', 'type', 'options']).where('workspace_id', '=', workspaceId).execute();
  return new Map(rows.map((r) => [r.key, { type: r.type, options: r.options }]));
}

function kindOf(field: string, fields: FieldDefinitions): Kind | undefined {
  if (field.startsWith('custom_fields.')) return fields.get(field.slice('custom_fields.'.length))?.type;
  return BUILT_IN[field];
}

/** 422 for a filter that names an unknown field or compares a value of the wrong type. */
export function checkSegmentFilter(filter: SegmentFilterRow, fields: FieldDefinitions, pointer = '/body/filter'): void {
  const errors: { pointer: string; detail: string }[] = [];
  filter.conditions.forEach((c, i) => {
    const at = `${pointer}/conditions/${i}`;
    const kind = kindOf(c.field, fields);
    if (!kind) return void errors.push({ pointer: `${at}/field`, detail: 'unknown custom field' });
    if (!OPERATORS[kind].includes(c.operator)) {
      return void errors.push({ pointer: `${at}/operator`, detail: `not applicable to a ${kind} field; use one of ${OPERATORS[kind].join(', ')}` });
    }
    const problem = valueProblem(c, kind, fields);
    if (problem) errors.push({ pointer: `${at}/value`, detail: problem });
  });
  if (errors.length) {
    throw new HttpProblem(
      422,
      'unprocessable',
      errors.length === 1 ? `Segment condition: ${errors[0]!.detail}.` : `${errors.length} segment conditions are invalid.`,
      { errors },
    );
  }
}

function valueProblem(c: SegmentConditionRow, kind: Kind, fields: FieldDefinitions): string | null {
  const { operator, value } = c;
  if (operator === 'exists' || operator === 'not_exists') return value === undefined ? null : `must be absent for ${operator}`;
  if (value === undefined) return `is required for ${operator}`;
  if (operator === 'within_days') {
    return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 36_500 ? null : 'must be a whole number of days from 0 to 36500';
  }
  switch (kind) {
    case 'number':
      return typeof value === 'number' ? null : 'must be a number';
    case 'date':
    case 'timestamp':
      return typeof value === 'string' && isCalendarDate(value) ? null : 'must be a date YYYY-MM-DD';
    case 'choice': {
      const options = fields.get(c.field.slice('custom_fields.'.length))?.options ?? [];
      return typeof value === 'string' && options.includes(value) ? null : `must be one of ${options.join(', ')}`;
    }
    default:
      return typeof value === 'string' && value.length > 0 ? null : 'must be a non-empty string';
  }
}

type Bool = RawBuilder<SqlBool>;

/**
 * Custom field `key` holds `value` (case-insensitively for text), as the containment that the GIN
 * index over the lower-cased fields serves (migration 037): a pre-filter, each caller keeps its
 * exact comparison. Both sides are lower-cased by the database, so they agree in every locale.
 */
export function customFieldsContain(key: string, value: string | number): Bool {
  return sql<SqlBool>`(cast(lower(cast(contacts.custom_fields as text)) as jsonb) @> cast(lower(${JSON.stringify({ [key]: value })}) as jsonb))`;
}

/**
 * What segment filters compile against: the workspace's custom fields, and the ids of the tags the
 * filters name (by lower-cased name). A tag condition is then a lookup of (tag, contact) whose tag
 * the planner knows, so a rare tag drives the query from its own index entries.
 */
export interface SegmentContext {
  fields: FieldDefinitions;
  tagIds: Map<string, string>;
}

export async function segmentContext(
  db: Kysely<Database>,
  workspaceId: string,
  filters: SegmentFilterRow[],
  fields?: FieldDefinitions,
): Promise<SegmentContext> {
  const names = filters.flatMap((f) => f.conditions.filter((c) => c.field === 'tag' && typeof c.value === 'string').map((c) => String(c.value)));
  const [definitions, tagIds] = await Promise.all([fields ?? loadFieldDefinitions(db, workspaceId), tagIdsByName(db, workspaceId, names)]);
  return { fields: definitions, tagIds };
}

/** The filter as a condition on `contacts` (the table must be in scope under that name). */
export function segmentCondition(filter: SegmentFilterRow, context: SegmentContext, { indexed = false } = {}): Bool {
  // A tag every member has drives a probe from its (tag, contact) entries, whose number the
  // planner knows; beside it, a custom field's containment (whose matches it can only guess)
  // would be chosen to drive instead and read all the contacts of a common value.
  const tagDriven =
    filter.match === 'all' && filter.conditions.some((c) => c.field === 'tag' && c.operator === 'eq' && context.tagIds.has(String(c.value).toLowerCase()));
  const parts = filter.conditions.map((c) => conditionSql(c, context, indexed && !tagDriven));
  if (!parts.length) return sql<SqlBool>`false`;
  return sql<SqlBool>`(${sql.join(parts, sql.raw(filter.match === 'any' ? ' or ' : ' and '))})`;
}

/**
 * `indexed`: equality on a custom field also as the containment the GIN index serves, for a probe
 * that finds a few members on it (list.ts); without, the exact comparison alone, for rows read
 * along another index (a segment's values are mostly common).
 */
function conditionSql(c: SegmentConditionRow, { fields, tagIds }: SegmentContext, indexed: boolean): Bool {
  const kind = kindOf(c.field, fields);
  // A field deleted after the segment was saved matches nothing rather than failing the read.
  if (!kind) return sql<SqlBool>`false`;
  if (kind === 'tag') return tagSql(c, tagIds);
  const column = columnSql(c.field, kind);
  const v = c.value;
  switch (c.operator) {
    case 'exists':
      return sql<SqlBool>`(${column} is not null)`;
    case 'not_exists':
      return sql<SqlBool>`(${column} is null)`;
    case 'within_days':
      return withinDays(column, kind, Number(v));
  }
  if (kind === 'timestamp') return timestampSql(column, c.operator, String(v));
  const contained = () => customFieldsContain(c.field.slice('custom_fields.'.length), kind === 'number' ? Number(v) : String(v));
  const probe = indexed && c.operator === 'eq' && c.field.startsWith('custom_fields.');
  if (kind === 'text' || kind === 'phone' || kind === 'choice') {
    const text = textSql(column, c.operator, String(v), kind === 'choice');
    return probe ? sql<SqlBool>`(${contained()} and ${text})` : text;
  }
  // number (numeric compare) and custom date (YYYY-MM-DD compares as text in calendar order)
  const value = kind === 'number' ? sql`cast(${Number(v)} as numeric)` : sql`${String(v)}`;
  const op = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.operator] ?? '=';
  if (c.operator === 'neq') return sql<SqlBool>`(${column} is distinct from ${value})`;
  if (probe) return sql<SqlBool>`(${contained()} and ${column} ${sql.raw(op)} ${value})`;
  return sql<SqlBool>`(${column} ${sql.raw(op)} ${value})`;
}

function columnSql(field: string, kind: Kind): RawBuilder<unknown> {
  if (field.startsWith('custom_fields.')) {
    const key = field.slice('custom_fields.'.length);
    if (kind === 'number') {
      return sql`(case when jsonb_typeof(contacts.custom_fields -> ${key}) = 'number' then cast(contacts.custom_fields ->> ${key} as numeric) end)`;
    }
    return sql`(contacts.custom_fields ->> ${key})`;
  }
  return sql.ref(`contacts.${field === 'contact_no' ? 'phone' : field}`);
}

function textSql(column: RawBuilder<unknown>, operator: string, value: string, exact: boolean): Bool {
  const equal = exact ? sql<SqlBool>`(${column} = ${value})` : sql<SqlBool>`(lower(${column}) = lower(${value}))`;
  switch (operator) {
    case 'eq':
      return equal;
    case 'neq':
      return sql<SqlBool>`(${column} is null or not ${equal})`;
    case 'contains':
      return ilikeContains(column, value);
    default:
      return sql<SqlBool>`(${column} is null or ${column} not ilike ${likeContains(value)})`;
  }
}

/** Dates against timestamps: a day is [00:00 UTC, next 00:00 UTC). */
function timestampSql(column: RawBuilder<unknown>, operator: string, date: string): Bool {
  const start = new Date(`${date}T00:00:00Z`);
  const end = new Date(start.getTime() + 86_400_000);
  switch (operator) {
    case 'eq':
      return sql<SqlBool>`(${column} >= ${start} and ${column} < ${end})`;
    case 'neq':
      return sql<SqlBool>`(${column} is null or ${column} < ${start} or ${column} >= ${end})`;
    case 'gt':
      return sql<SqlBool>`(${column} >= ${end})`;
    case 'gte':
      return sql<SqlBool>`(${column} >= ${start})`;
    case 'lt':
      return sql<SqlBool>`(${column} < ${start})`;
    default:
      return sql<SqlBool>`(${column} < ${end})`;
  }
}

function withinDays(column: RawBuilder<unknown>, kind: Kind, days: number): Bool {
  if (kind === 'timestamp') return sql<SqlBool>`(${column} >= now() - make_interval(days => ${days}::int))`;
  // a custom date: from `days` days ago up to today (UTC), as YYYY-MM-DD text
  const today = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
  return sql<SqlBool>`(${column} >= ${from} and ${column} <= ${today})`;
}

function tagSql(c: SegmentConditionRow, tagIds: Map<string, string>): Bool {
  const any = sql`select 1 from contact_tags ct where ct.contact_id = contacts.id`;
  // A tag that does not exist (deleted, or never made) is on no contact.
  const id = tagIds.get(String(c.value).toLowerCase());
  const tagged = id === undefined ? sql<SqlBool>`false` : sql<SqlBool>`exists (${any} and ct.tag_id = ${id})`;
  switch (c.operator) {
    case 'exists':
      return sql<SqlBool>`exists (${any})`;
    case 'not_exists':
      return sql<SqlBool>`not exists (${any})`;
    case 'eq':
      return tagged;
    default:
      return sql<SqlBool>`(not ${tagged})`;
  }
}
