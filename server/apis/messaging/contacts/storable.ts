// Text PostgreSQL cannot store as sent: NUL (text columns refuse it) and lone UTF-16 surrogates
// (they would be written as U+FFFD, silently changing the value). Refused with 400 naming each
// field (H8); everything else (RTL marks, zero-width, combining marks, emoji) is stored as is.
import { HttpProblem } from '../../../lib/problems.js';

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function collect(value: unknown, pointer: string, out: string[]): void {
  if (typeof value === 'string') {
    if (UNSTORABLE.test(value)) out.push(pointer);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => collect(v, `${pointer}/${i}`, out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (UNSTORABLE.test(k)) out.push(at);
      else collect(v, at, out);
    }
  }
}

/** 400 `validation` when any string in `value` (keys included) holds NUL or a lone surrogate. */
export function assertStorable(value: unknown, pointer = '/body'): void {
  const bad: string[] = [];
  collect(value, pointer, bad);
  if (bad.length) {
    throw new HttpProblem(400, 'validation', 'Text with NUL characters or lone surrogates cannot be stored.', {
      errors: bad.slice(0, 20).map((p) => ({ pointer: p.replace(/[\ud800-\udfff\u0000]/g, '\ufffd'), detail: 'contains a NUL character or a lone surrogate' })),
    });
  }
}

/** Whether `error` is a unique violation (concurrent creates of the same name or number). */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
