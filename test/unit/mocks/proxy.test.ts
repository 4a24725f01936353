// The validating proxy end to end (mocks/proxy.mjs): Prism in front of a stand-in upstream that
// answers what the test tells it to; every violation reaches onViolation with the exchange it
// belongs to, a conforming exchange reports none, and multipart bytes pass through intact.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bypasses, startProxies, streamPaths } from '../../../mocks/proxy.mjs';

type Violation = { api: string; method: string; path: string; status: number; part: string; where: string; message: string; contractCase?: string };
const violations: Violation[] = [];
const bypassed: { reason: string; path: string }[] = [];
let upstreamAnswer: { status: number; type: string; body: string } = { status: 200, type: 'application/json', body: '{}' };
let received: Buffer = Buffer.alloc(0);
let proxies: { urls: Record<string, string>; stop: () => Promise<unknown> };
let upstream: http.Server;

const owner = { authorization: 'Bearer owner.token' };
// The document's own example of getAccount's answer: conforming by construction.
const doc = parse(readFileSync(new URL('../../../generated/account/openapi.3.1.yaml', import.meta.url), 'utf8'));
const me = Object.values<any>(doc.paths['/api/account/me'].get.responses['200'].content['application/json'].examples)[0].value;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received = Buffer.concat(chunks);
      res.writeHead(upstreamAnswer.status, { 'content-type': upstreamAnswer.type }).end(upstreamAnswer.body);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  proxies = await startProxies({
    upstream: `http://127.0.0.1:${port}`,
    apis: ['account'],
    ports: { account: 4640 },
    onViolation: (v: Violation) => violations.push(v),
    onBypass: (b: { reason: string; path: string }) => bypassed.push(b),
  });
}, 60_000);
afterAll(async () => {
  await proxies?.stop();
  upstream?.close();
});

async function through(path: string, init: RequestInit = {}) {
  violations.length = 0;
  const res = await fetch(`${proxies.urls.account}${path}`, init);
  return { status: res.status, body: await res.text() };
}

describe('validating proxy', () => {
  it('a conforming exchange reports nothing', async () => {
    upstreamAnswer = { status: 200, type: 'application/json', body: JSON.stringify(me) };
    const res = await through('/api/account/me', { headers: owner });
    expect(res.status).toBe(200);
    expect(violations).toEqual([]);
  });

  it('a response that breaks the contract is reported with its exchange, and still passed on', async () => {
    upstreamAnswer = { status: 200, type: 'application/json', body: JSON.stringify({ owner: { id: 5 } }) };
    const res = await through('/api/account/me', { headers: { ...owner, 'x-contract-case': 'getAccount/me' } });
    expect(res).toEqual({ status: 200, body: upstreamAnswer.body });
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.every((v) => v.part === 'response')).toBe(true);
    expect(violations[0]).toMatchObject({ api: 'account', method: 'GET', path: '/api/account/me', status: 200, contractCase: 'getAccount/me' });
  });

  it('a request that breaks the contract (no credentials) is reported as a request violation and still forwarded', async () => {
    upstreamAnswer = { status: 200, type: 'application/json', body: JSON.stringify(me) };
    const res = await through('/api/account/me', { headers: {} });
    expect(res.status).toBe(200);
    const request = violations.filter((v) => v.part === 'request');
    expect(request.length).toBeGreaterThan(0);
    expect(violations.filter((v) => v.part === 'response')).toEqual([]);
  });

  it('an undeclared status is a response violation', async () => {
    upstreamAnswer = { status: 418, type: 'application/json', body: '{}' };
    await through('/api/account/me', { headers: owner });
    expect(violations.filter((v) => v.part === 'response').length).toBeGreaterThan(0);
  });

  it('multipart bytes go straight upstream, unchanged, counted as not validated', async () => {
    upstreamAnswer = { status: 201, type: 'application/json', body: '{}' };
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/pdf' }), 'x.pdf');
    await through('/api/account/me', { method: 'POST', headers: owner, body: form });
    expect(received.includes(bytes)).toBe(true);
    expect(bypassed.at(-1)).toMatchObject({ reason: 'multipart', path: '/api/account/me' });
  });
});

describe('what skips Prism', () => {
  const patterns = streamPaths({
    paths: {
      '/v1/events/{sessionId}': { get: { responses: { '200': { content: { 'text/event-stream': {} } } } } },
      '/v1/x': { get: { responses: { '200': {} } } },
    },
  });
  const req = (url: string, headers: Record<string, string> = {}) => ({ url, headers }) as unknown as http.IncomingMessage;

  it('event streams by path or by Accept, multipart by content type, nothing else', () => {
    expect(bypasses(req('/v1/events/ls_1?token=t'), patterns)).toBe('stream');
    expect(bypasses(req('/v1/x', { accept: 'text/event-stream' }), patterns)).toBe('stream');
    expect(bypasses(req('/v1/x', { 'content-type': 'multipart/form-data; boundary=b' }), patterns)).toBe('multipart');
    expect(bypasses(req('/v1/x'), patterns)).toBeNull();
    expect(bypasses(req('/v1/events/a/b'), patterns)).toBeNull();
  });
});
