// Reading Prism's `sl-violations` header, the one-line summaries, the JSON report, and which
// request violations a contract run through the proxy expects (deliberately bad examples).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatViolation, parseViolations, summarise, writeReport } from '../../../mocks/violations.mjs';
import { classify, deliberatelyBad, proxyVerdict, type ProxyViolation } from '#test/contract/proxy-report.js';

const exchange = { api: 'messaging', method: 'POST', path: '/api/contacts', status: 201 };
// As prism-http-server 5.x writes it (createErrorObjectWithPrefix): location starts with the part.
const header = JSON.stringify([
  { location: ['request', 'body', 'name'], severity: 'Error', code: 'type', message: 'Request body property name must be string' },
  { location: ['response', 'body', 'data', '0'], severity: 'Error', code: 'required', message: "Response body must have required property 'id'" },
  { location: ['response', 'header'], severity: 'Warning', code: 'content-type', message: 'Unknown content type' },
]);
const dir = mkdtempSync(join(tmpdir(), 'violations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseViolations', () => {
  it('no header: no violation', () => {
    expect(parseViolations(undefined, exchange)).toEqual([]);
  });

  it('splits request from response and keeps where and how severe', () => {
    const found = parseViolations(header, exchange);
    expect(found.map((v) => [v.part, v.where, v.severity])).toEqual([
      ['request', 'request.body.name', 'error'],
      ['response', 'response.body.data.0', 'error'],
      ['response', 'response.header', 'warning'],
    ]);
    expect(found[1]).toMatchObject({ ...exchange, code: 'required', message: "Response body must have required property 'id'" });
  });

  it('a header Prism cut short still counts as a response violation', () => {
    const found = parseViolations(`Too many violations! ${header.slice(0, 50)}`, exchange);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ part: 'response', severity: 'error' });
    expect(found[0]!.message).toMatch(/unreadable violations header: Too many violations!/);
  });

  it('a header that is not JSON is not dropped', () => {
    expect(parseViolations('garbage', exchange)).toMatchObject([{ part: 'response', message: 'unreadable violations header: garbage' }]);
  });
});

describe('summaries and the report', () => {
  const found = parseViolations(header, { ...exchange, contractCase: 'createContact/invalid_phone' });

  it('one line: part, api, method, path, status, where, message, case', () => {
    expect(formatViolation(found[1])).toBe(
      "RESPONSE messaging POST /api/contacts → 201: body.data.0 Response body must have required property 'id' [createContact/invalid_phone]",
    );
    expect(formatViolation({ ...found[0], expected: true })).toMatch(/^request \(deliberately bad input\) messaging POST/);
  });

  it('writes the summary and every violation as JSON', () => {
    const file = join(dir, 'nested', 'report.json');
    const summary = writeReport(file, [...found, { ...found[0], expected: true }], { upstream: 'http://127.0.0.1:3000' });
    expect(summary).toEqual({ response: 2, request: 2, request_expected: 1, request_unexpected: 1 });
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(written).toMatchObject({ upstream: 'http://127.0.0.1:3000', summary });
    expect(written.violations).toHaveLength(4);
  });

  it('an empty run sums to zero', () => {
    expect(summarise([])).toEqual({ response: 0, request: 0, request_expected: 0, request_unexpected: 0 });
  });
});

describe('expected request violations', () => {
  const bad = deliberatelyBad(['messaging']);

  it('the deliberately bad examples are the error examples of the documents', () => {
    expect(bad.has('createContact/invalid_phone')).toBe(true);
    expect(bad.has('listContacts/search_vip_in_berlin')).toBe(false);
  });

  it('a request violation is expected only for a deliberately bad example, never a response one', () => {
    const v = (part: 'request' | 'response', contractCase?: string): ProxyViolation => ({
      ...exchange,
      part,
      where: part,
      severity: 'error',
      message: 'm',
      contractCase,
    });
    const marked = classify(
      [
        v('request', 'createContact/invalid_phone'),
        v('request', 'listContacts/search_vip_in_berlin'),
        v('request'),
        v('response', 'createContact/invalid_phone'),
      ],
      bad,
    );
    expect(marked.map((m) => m.expected)).toEqual([true, false, false, false]);
  });
});

describe('the verdict of a run through the proxy', () => {
  const v = (part: 'request' | 'response', contractCase?: string): ProxyViolation => ({
    ...exchange,
    part,
    where: `${part}.body`,
    severity: 'error',
    message: 'm',
    contractCase,
  });
  const file = join(dir, 'verdict.json');
  const quiet = { log: console.log, error: console.error };
  const run = (list: ProxyViolation[]) => {
    console.log = console.error = () => {};
    try {
      return proxyVerdict(list, [{ reason: 'stream' }], 'http://127.0.0.1:3000', file);
    } finally {
      Object.assign(console, quiet);
    }
  };

  it('0 response violations and only deliberately bad requests: passes, and the report says so', () => {
    expect(() => run([v('request', 'createContact/invalid_phone')])).not.toThrow();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      summary: { response: 0, request_expected: 1, request_unexpected: 0 },
      bypassed: { count: 1 },
    });
  });

  it('one response violation fails the run', () => {
    expect(() => run([v('response', 'listContacts/search_vip_in_berlin')])).toThrow(/1 response and 0 unexpected request violation/);
  });

  it('a request violation of a success example fails the run', () => {
    expect(() => run([v('request', 'listContacts/search_vip_in_berlin')])).toThrow(/0 response and 1 unexpected request violation/);
  });
});
