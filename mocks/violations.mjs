// Contract violations seen by the validating proxy: Prism puts them in the `sl-violations` header
// of each answer (JSON, one object per broken rule, `location` starting with "request" or
// "response"); these read that header, print one line per violation and write the JSON report.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The violations of one exchange, from the value of its `sl-violations` header.
 * @param {string | undefined} header
 * @param {{ api: string, method: string, path: string, status: number, contractCase?: string }} exchange
 */
export function parseViolations(header, exchange) {
  if (!header) return [];
  // Prism cuts a header over 8 KB and says so; what is left is not JSON, but it is a violation.
  const truncated = header.startsWith('Too many violations!');
  let entries;
  try {
    entries = JSON.parse(truncated ? '[]' : header);
  } catch {
    entries = [];
  }
  if (!Array.isArray(entries) || (!entries.length && header)) {
    entries = [{ location: ['response'], severity: 'Error', message: `unreadable violations header: ${header.slice(0, 200)}` }];
  }
  return entries.map((v) => {
    const location = Array.isArray(v.location) ? v.location.map(String) : ['response'];
    return {
      ...exchange,
      part: location[0] === 'request' ? 'request' : 'response',
      where: location.join('.'),
      severity: String(v.severity ?? 'Error').toLowerCase(),
      message: String(v.message ?? ''),
      ...(v.code !== undefined ? { code: v.code } : {}),
    };
  });
}

/** One line a person reads: method, path, status, which part broke, the message. */
export function formatViolation(v) {
  const label = v.part === 'request' ? (v.expected ? 'request (deliberately bad input)' : 'REQUEST') : 'RESPONSE';
  const where = v.where.replace(/^(request|response)\.?/, '') || '(whole)';
  return `${label} ${v.api} ${v.method} ${v.path} → ${v.status}: ${where} ${v.message}${v.contractCase ? ` [${v.contractCase}]` : ''}`;
}

/** Counts by part; request violations split into the deliberately bad inputs and the others. */
export function summarise(violations) {
  const response = violations.filter((v) => v.part === 'response').length;
  const request = violations.filter((v) => v.part === 'request');
  const expected = request.filter((v) => v.expected).length;
  return { response, request: request.length, request_expected: expected, request_unexpected: request.length - expected };
}

/** Writes the JSON report (summary first, then every violation) and returns the summary. */
export function writeReport(file, violations, extra = {}) {
  const summary = summarise(violations);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ ...extra, summary, violations }, null, 2)}\n`);
  return summary;
}
