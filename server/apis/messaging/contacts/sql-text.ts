// Text searched as text: `%`, `_` and `\` in user input match themselves (bad-inputs J1), using
// PostgreSQL's default LIKE escape character, the backslash.

/** An ILIKE pattern matching `text` anywhere. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}
