// CSV as RFC 4180 writes it: comma-separated, CRLF or LF line ends, fields in double quotes when
// they hold commas, quotes or line breaks (a quote inside doubled). The reader is strict: a quote
// inside an unquoted field, text after a closing quote or an unclosed quote is an error naming the
// line. Cells a spreadsheet would run as a formula are written with a leading `'` (OWASP's advice
// against CSV injection), which the reader takes off again so an export imports back unchanged.

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
}

/** Every row of `text` (the header first); blank lines are skipped. TooManyRows past `maxRows` data rows. */
export function parseCsv(text: string, maxRows: number): CsvRow[] {
  const rows: CsvRow[] = [];
  let i = 0;
  let line = 1;
  const n = text.length;
  while (i < n) {
    const start = line;
    const cells: string[] = [];
    for (;;) {
      let cell = '';
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
    if (!(cells.length === 1 && cells[0] === '')) {
      if (rows.length > maxRows) throw new TooManyRows(maxRows);
      rows.push({ line: start, cells });
    }
    line++;
  }
  return rows;
}

export class TooManyRows extends Error {
  constructor(readonly max: number) {
    super(`more than ${max} rows`);
  }
}

const FORMULA = /^[=+\-@\t\r]/;

/** A cell as written: guarded against formulas (`guard`), quoted when needed. */
export function csvCell(value: string, guard = true): string {
  const text = guard && FORMULA.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A cell as read: the formula guard taken off. */
export function unguard(value: string): string {
  return value.length > 1 && value[0] === "'" && FORMULA.test(value.slice(1)) ? value.slice(1) : value;
}
