// JSON whose large integers stay exact: storefronts send 18-digit order, customer and line-item
// ids as JSON numbers (Shopify's `"id": 820982911946154508`), which JSON.parse rounds to the
// nearest double (…4500). Integers beyond Number.MAX_SAFE_INTEGER are read as their digits, a
// string; every other value parses as JSON.parse parses it. Node 20 has no JSON.parse source
// access, so the text is scanned once and such integers are quoted before parsing.

/** JSON.parse, with integers that a double cannot hold exactly kept as strings of their digits. */
export function parseJsonLossless(text: string): unknown {
  return JSON.parse(quoteUnsafeIntegers(text));
}

const DIGIT = /[0-9]/;

function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let last = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === '"') {
      // Skip the string, escapes included.
      i++;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === '-' || DIGIT.test(c)) {
      const start = i;
      if (c === '-') i++;
      while (i < n && DIGIT.test(text[i]!)) i++;
      const integerEnd = i;
      // A fraction or exponent: not an id, parsed as a number.
      if (i < n && (text[i] === '.' || text[i] === 'e' || text[i] === 'E')) {
        while (i < n && /[0-9.eE+-]/.test(text[i]!)) i++;
        continue;
      }
      const literal = text.slice(start, integerEnd);
      if (literal !== '-' && !Number.isSafeInteger(Number(literal))) {
        out += `${text.slice(last, start)}"${literal}"`;
        last = integerEnd;
      }
      continue;
    }
    i++;
  }
  return last === 0 ? text : out + text.slice(last);
}
