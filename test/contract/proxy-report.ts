// The verdict of a contract run through the validating proxies (CONTRACT_TARGETS=proxy): every
// violation is printed and written to .tmp/contract-proxy-violations.json; the run fails on any
// response violation, and on any request violation other than a deliberately bad example's (a
// case whose example answers 4xx: it exists to send what the contract refuses).
import { resolve } from 'node:path';
import { formatViolation, writeReport } from '../../mocks/violations.mjs';
import { API_NAMES } from '#server/contract.js';
import { loadCases } from './cases.js';

export const PROXY_REPORT = resolve('.tmp/contract-proxy-violations.json');

export interface ProxyViolation {
  api: string;
  method: string;
  path: string;
  status: number;
  part: 'request' | 'response';
  where: string;
  severity: string;
  message: string;
  contractCase?: string;
  expected?: boolean;
}

/** `operationId/example` of every case whose example is an error answer. */
export function deliberatelyBad(apis: readonly string[] = API_NAMES): Set<string> {
  return new Set(
    apis.flatMap((api) =>
      loadCases(api)
        .filter((c) => (c.status ?? 200) >= 400)
        .map((c) => `${c.operationId}/${c.example}`),
    ),
  );
}

/** Marks the expected request violations; the rest stand. */
export function classify(violations: ProxyViolation[], bad: Set<string>): ProxyViolation[] {
  return violations.map((v) => ({ ...v, expected: v.part === 'request' && !!v.contractCase && bad.has(v.contractCase) }));
}

export function proxyVerdict(violations: ProxyViolation[], bypassed: { reason: string }[], upstream: string, report = PROXY_REPORT): void {
  const classified = classify(violations, deliberatelyBad());
  const summary = writeReport(report, classified, {
    upstream,
    bypassed: {
      count: bypassed.length,
      note: 'event streams and multipart uploads go straight to the server (Prism cannot pass them through)',
      requests: bypassed,
    },
  });
  for (const v of classified) if (!v.expected) console.error(formatViolation(v));
  const badCases = new Set(classified.filter((v) => v.expected).map((v) => v.contractCase));
  console.log(
    `validating proxy: ${summary.response} response violation(s), ${summary.request_unexpected} unexpected request violation(s); ` +
      `${summary.request_expected} expected ones from ${badCases.size} deliberately bad example(s); ${bypassed.length} request(s) not validated (streams, uploads); report: ${report}`,
  );
  if (summary.response || summary.request_unexpected) {
    throw new Error(`the validating proxy saw ${summary.response} response and ${summary.request_unexpected} unexpected request violation(s): see ${report}`);
  }
}
