// Text searched as text: `%`, `_` and `\` in user input match themselves (bad-inputs J1), using
// PostgreSQL's default LIKE escape character, the backslash.
import { sql, type RawBuilder, type SqlBool } from 'kysely';

/** An ILIKE pattern matching `text` anywhere. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

/**
 * `column ILIKE %text%`. A trigram index (migration 037) finds text of three characters or more;
 * a shorter one has no trigram to look up and would read the whole index, so it is kept off the
 * index (an expression the index does not cover) and checked row by row along another plan.
 */
export function ilikeContains(column: RawBuilder<unknown>, text: string, op: 'ilike' | 'like' = 'ilike'): RawBuilder<SqlBool> {
  const target = [...text].length < 3 ? sql`coalesce(${column}, '')` : column;
  return sql<SqlBool>`(${target} ${sql.raw(op)} ${likeContains(text)})`;
}
