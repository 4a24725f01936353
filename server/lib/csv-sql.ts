// What a CSV writer asks of a text column, in SQL and without regular expressions: whether its
// first or last character, or any character, is one of a few. A regular expression over the value
// costs several times as much per cell, and exports write millions of cells (contacts, sessions).
// Characters are given as code points; `chr(…)` of a constant is folded once per statement.
const list = (codes: number[]) => codes.join(', ');

/** `value` starts with one of `codes` (false for ''). */
export const firstCharIn = (value: string, codes: number[]) => `ascii(${value}) in (${list(codes)})`;

/** `value` ends with one of `codes` (false for ''). */
export const lastCharIn = (value: string, codes: number[]) => `ascii(right(${value}, 1)) in (${list(codes)})`;

/** `value` holds one of `codes` anywhere. */
export const containsAnyOf = (value: string, codes: number[]) => `(${codes.map((c) => `strpos(${value}, chr(${c})) > 0`).join(' or ')})`;
