// Retries against a tiny local server that answers as each test says: 429/503 retried honouring
// Retry-After (seconds and HTTP date), backoff bounded, POST bodies re-sent intact, network errors
// retried only for idempotent methods or with an Idempotency-Key.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMessagingClient, retryAfterMs, unwrap, isProblem } from '../../../clients/index.js';

interface Seen {
  method: string;
  body: string;
  at: number;
}
let seen: Seen[] = [];
let script: ((req: IncomingMessage, res: ServerResponse, n: number) => void)[] = [];
const sockets = new Set<Socket>();
let baseUrl: string;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    seen.push({ method: req.method!, body: Buffer.concat(chunks).toString(), at: Date.now() });
    const step = script[seen.length - 1] ?? ok;
    step(req, res, seen.length);
  });
});
server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));

const ok = (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[],"has_more":false,"next_cursor":null}');
const status =
  (code: number, headers: Record<string, string> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) =>
    res
      .writeHead(code, { 'content-type': 'application/problem+json', ...headers })
      .end(JSON.stringify({ type: `https://chatapp.example/problems/${code === 429 ? 'rate-limited' : 'unavailable'}`, title: 'x', status: code }));
/** Drops the connection without an answer: a network error for the client. */
const drop = (req: IncomingMessage) => req.socket.destroy();

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen = [];
  script = [];
});

const client = (retry = {}) => createMessagingClient({ baseUrl, auth: { apiKey: 'mk_test' }, retry: { baseDelayMs: 10, ...retry } });
const gaps = () => seen.slice(1).map((s, i) => s.at - seen[i]!.at);

describe('429 and 503', () => {
  it('429 with Retry-After: 1 then 200: two attempts a second apart', async () => {
    script = [status(429, { 'retry-after': '1' }), ok];
    const res = await client().GET('/api/contacts');
    expect(res.response.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(gaps()[0]).toBeGreaterThanOrEqual(950);
  });

  it('503 with Retry-After as an HTTP date, then 200', async () => {
    script = [status(503, { 'retry-after': new Date(Date.now() + 1500).toUTCString() }), ok];
    const res = await client().GET('/api/contacts');
    expect(res.response.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(gaps()[0]).toBeGreaterThanOrEqual(300); // HTTP dates have whole seconds
  });

  it('a POST answered 429 is retried with the same body (the request is cloned before the first attempt)', async () => {
    script = [status(429, { 'retry-after': '0' }), status(503), ok];
    const res = await client().POST('/api/contacts', { body: { contact_no: '+15550100404', name: 'Bo' } });
    expect(res.response.status).toBe(200);
    expect(seen.map((s) => s.method)).toEqual(['POST', 'POST', 'POST']);
    expect(new Set(seen.map((s) => s.body))).toEqual(new Set([JSON.stringify({ contact_no: '+15550100404', name: 'Bo' })]));
  });

  it('bounded: maxRetries 2 makes 3 attempts, then the 429 is the answer (ProblemError rate-limited)', async () => {
    script = [status(429), status(429), status(429), ok];
    const res = await client({ maxRetries: 2 }).GET('/api/contacts');
    expect(seen).toHaveLength(3);
    expect(() => unwrap(res)).toThrow(expect.objectContaining({ status: 429 }));
    try {
      unwrap(res);
    } catch (e) {
      expect(isProblem(e, 'rate-limited')).toBe(true);
    }
  });

  it('a Retry-After longer than maxDelayMs is not waited for: the 429 comes back at once', async () => {
    script = [status(429, { 'retry-after': '120' }), ok];
    const started = Date.now();
    const res = await client({ maxDelayMs: 5000 }).GET('/api/contacts');
    expect(res.response.status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('without Retry-After: exponential backoff with full jitter, each wait under base * 2^n', async () => {
    script = [status(503), status(503), status(503), ok];
    await client({ baseDelayMs: 100 }).GET('/api/contacts');
    expect(seen).toHaveLength(4);
    gaps().forEach((g, n) => expect(g).toBeLessThan(100 * 2 ** n + 80));
  });

  it('retry: false makes one attempt; other statuses (500, 400) are never retried', async () => {
    script = [status(429)];
    expect((await createMessagingClient({ baseUrl, retry: false }).GET('/api/contacts')).response.status).toBe(429);
    script = [status(429), status(500)];
    seen = [];
    expect((await client().GET('/api/contacts')).response.status).toBe(500);
    expect(seen).toHaveLength(2);
  });

  it('an abort during the wait stops the retries', async () => {
    script = [status(429, { 'retry-after': '5' }), ok];
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error('stop')), 200);
    await expect(client().GET('/api/contacts', { signal: abort.signal })).rejects.toThrow('stop');
    expect(seen).toHaveLength(1);
  });
});

describe('network errors', () => {
  it('a GET is retried after the connection drops', async () => {
    script = [drop, ok];
    const res = await client().GET('/api/contacts');
    expect(res.response.status).toBe(200);
    expect(seen.map((s) => s.method)).toEqual(['GET', 'GET']);
  });

  it('a POST without Idempotency-Key is NOT retried after a network error (it may have happened)', async () => {
    script = [drop, ok];
    await expect(client().POST('/api/contacts', { body: { contact_no: '+15550100505' } })).rejects.toThrow();
    expect(seen).toHaveLength(1);
  });

  it('a POST with an Idempotency-Key is retried after a network error, same key and body', async () => {
    script = [drop, ok];
    const res = await client().POST('/api/contacts', { body: { contact_no: '+15550100606' }, headers: { 'Idempotency-Key': 'idem-1' } } as never);
    expect((res as { response: Response }).response.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.body).toBe(JSON.stringify({ contact_no: '+15550100606' }));
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates; garbage is undefined', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs('Mon, 23 Nov 2026 10:00:07 GMT', now)).toBe(7000);
    expect(retryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});
