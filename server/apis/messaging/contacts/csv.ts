// CSV as RFC 4180 writes it: comma-separated, CRLF or LF line ends, fields in double quotes when
// they hold commas, quotes or line breaks (a quote inside doubled). The reader is strict: a quote
// inside an unquoted field, text after a closing quote or an unclosed quote is an error naming the
// line. Cells a spreadsheet would run as a formula are written with a leading `'` (OWASP's advice
// against CSV injection), which the reader takes off again so an export imports back unchanged. A
// value that itself begins with `'` gets the prefix too (`'=x` is written `''=x`, `'tis` `''tis`),
// so the reader never takes off a quote that was the value's own. Unquoted cells are read trimmed
// (hand-written files), quoted ones as they are; a value with spaces at either end is written quoted.
import { containsAnyOf, firstCharIn, lastCharIn } from '#server/lib/csv-sql.js';

export class CsvError extends Error {
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`line ${line}: ${detail}`);
  }
}

export interface CsvRow {
  /** The line the row starts on (1-based; the header is line 1). */
  line: number;
  cells: string[];
  /** Whether each cell was in double quotes (its spaces are then the value's own). */
  quoted: boolean[];
}

/** Every row of `text` (the header first); blank lines are skipped. TooManyRows past `maxRows` data rows. */
export function parseCsv(text: string, maxRows: number): CsvRow[] {
  const rows: CsvRow[] = [];
  for (const row of readCsv(text)) {
    if (rows.length > maxRows) throw new TooManyRows(maxRows);
    rows.push(row);
  }
  return rows;
}

/** The rows of `text` one at a time (the header first; blank lines skipped), so that a large file is never a large array. */
export function* readCsv(text: string): Generator<CsvRow> {
  let i = 0;
  let line = 1;
  const n = text.length;
  while (i < n) {
    const start = line;
    const cells: string[] = [];
    const quoted: boolean[] = [];
    for (;;) {
      let cell = '';
      quoted.push(text[i] === '"');
      if (text[i] === '"') {
        i++;
        for (;;) {
          const q = text.indexOf('"', i);
          if (q < 0) throw new CsvError(start, 'a quoted field is not closed');
          const chunk = text.slice(i, q);
          for (let k = chunk.indexOf('\n'); k >= 0; k = chunk.indexOf('\n', k + 1)) line++;
          cell += chunk;
          i = q + 1;
          if (text[i] === '"') {
            cell += '"';
            i++;
            continue;
          }
          break;
        }
        if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') throw new CsvError(line, 'text after a closing quote');
      } else {
        let j = i;
        while (j < n && text[j] !== ',' && text[j] !== '\n' && text[j] !== '\r') j++;
        cell = text.slice(i, j);
        if (cell.includes('"')) throw new CsvError(line, 'a quote inside an unquoted field (quote the whole field and double the quote)');
        i = j;
      }
      cells.push(cell);
      if (i < n && text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    else if (i < n) throw new CsvError(line, 'a carriage return inside an unquoted field');
    line++;
    if (!(cells.length === 1 && cells[0] === '')) yield { line: start, cells, quoted };
  }
}

export class TooManyRows extends Error {
  constructor(readonly max: number) {
    super(`more than ${max} rows`);
  }
}

const FORMULA = /^[=+\-@\t\r]/;

/** A cell as written: guarded against formulas (`guard`; a leading `'` of the value's own kept by a second one), quoted when needed. */
export function csvCell(value: string, guard = true): string {
  const text = guard && (FORMULA.test(value) || value.startsWith("'")) ? `'${value}` : value;
  // Quoted too when it starts or ends with spaces: the reader trims only unquoted cells.
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A cell as read: the guard taken off (a `'` before a formula character or before another `'`); any other `'` is the value's. */
export function unguard(value: string): string {
  return value.length > 1 && value[0] === "'" && (FORMULA.test(value.slice(1)) || value[1] === "'") ? value.slice(1) : value;
}

/** The code points of what `\s` matches in JavaScript but tab (line breaks, spaces, no-break and other Unicode spaces, BOM). */
const SPACE_CODES = [10, 11, 12, 13, 32, 0xa0, 0x1680, ...Array.from({ length: 11 }, (_, i) => 0x2000 + i), 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff];
/** The first characters a guard is written before: = + @ tab CR ' - */
const GUARD_CODES = [61, 43, 64, 9, 13, 39, 45];
/** The characters that ask for quotes anywhere: " , CR LF */
const QUOTED_CODES = [34, 44, 13, 10];

/**
 * `csvCell` in SQL: the cell of `value`, a text column (never null), written by the database so
 * that an export builds each line with no JavaScript step per row; byte for byte what csvCell
 * writes (the export tests hold both to the same output). `value` is read several times: pass a
 * column of a subquery, not an expression to compute. A guarded value starting with a tab or CR
 * starts with `'` once written, so only the other spaces there ask for quotes (a CR does anyway).
 * The checks are #server/lib/csv-sql.ts's, without regular expressions.
 */
export function csvCellSql(value: string, guard = true): string {
  const prefix = guard ? `(case when ${firstCharIn(value, GUARD_CODES)} then '''' else '' end)` : `''`;
  const quote = `(${containsAnyOf(value, QUOTED_CODES)} or ${firstCharIn(value, guard ? SPACE_CODES : [9, ...SPACE_CODES])} or ${lastCharIn(value, [9, ...SPACE_CODES])})`;
  return `(case when ${quote} then '"' || ${prefix} || replace(${value}, '"', '""') || '"' else ${prefix} || ${value} end)`;
}
