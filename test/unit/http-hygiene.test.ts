// HTTP hygiene from outside (catalogue groups K and M, bad-inputs A2's 431, bad-inputs L8): security headers, rate
// limits, sizes, timeouts, and problem+json for every error Fastify or Node raise themselves.
import { hash } from 'node:crypto';
import { connect } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { build, buildShared } from '../helper.js';
import { rateLimitKey } from '#server/plugins/rate-limits.js';
import { createKey, signUp } from './account/support.js';

const P = 'https://chatapp.example/problems/';
const AUTHED = '/api/chatapp/connections'; // listConnections: needs a Messaging key
const PUBLIC = '/api/industry-packs/public'; // listIndustryPacks: security []
const METADATA = '/.well-known/oauth-authorization-server'; // implemented, public
const SIGN_UP = '/api/account/workspaces'; // createWorkspace: public, takes a JSON body

/** A real Messaging key of a new workspace: authentication runs before limits and bodies. */
async function messagingKey(app: FastifyInstance): Promise<string> {
  const owner = await signUp(app);
  return (await createKey(app, owner.token)).secret;
}

/** Every error body seen in this file, checked once more for leaks at the end (bad-inputs M1, M2). */
const errors: { status: number; contentType: string; body: string }[] = [];
function seen(res: LightMyRequestResponse): LightMyRequestResponse {
  if (res.statusCode >= 400) errors.push({ status: res.statusCode, contentType: String(res.headers['content-type']), body: res.body });
  return res;
}

/** Sends raw bytes to a listening server and returns everything it answers before closing. */
function raw(port: number, request: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {}); // the server closes after answering; what it sent is what counts
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      if (!head) return reject(new Error('connection closed without an answer'));
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body });
    });
  });
}

describe('http hygiene', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared();
  });

  it('L8 security headers on an API answer', async () => {
    const res = await app.inject(METADATA);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['strict-transport-security']).toBeUndefined(); // development: no HSTS on http://
  });

  it('L8 security headers on a 404 and on an error', async () => {
    for (const res of [
      await app.inject('/no/such/route'),
      await app.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'content-type': 'application/json' }, payload: '{' }),
    ]) {
      seen(res);
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    }
  });

  it('K1 RateLimit-Limit, -Remaining and -Reset on API answers, per credential and per IP', async () => {
    const keyed = await app.inject({ url: AUTHED, headers: { 'x-api-key': await messagingKey(app) } });
    expect(keyed.headers['ratelimit-limit']).toBe('600');
    expect(keyed.headers['ratelimit-remaining']).toBe('599');
    expect(Number(keyed.headers['ratelimit-reset'])).toBeGreaterThan(0);
    const anonymous = seen(await app.inject({ url: PUBLIC, remoteAddress: '10.9.9.9' }));
    expect(anonymous.headers['ratelimit-limit']).toBe('120');
    expect(anonymous.headers['ratelimit-remaining']).toBe('119');
  });

  it('K1 the limiter key is a keyed hash, never the credential', () => {
    // Limits run after authentication: `auth` is set on a request whose credential was verified.
    const request = (headers: Record<string, string>) =>
      ({ method: 'GET', ip: '10.0.0.1', headers, auth: { workspaceId: 'w', kind: 'api_key', scopes: [] } }) as never;
    const key = rateLimitKey(request({ 'x-api-key': 'sk_live_secret_value' }));
    expect(key).toMatch(/^key:[\w-]{43}$/);
    expect(key).not.toContain('secret');
    expect(key).not.toBe(`key:${hash('sha256', 'sk_live_secret_value', 'base64url')}`); // keyed: a guess cannot be checked
    expect(rateLimitKey(request({ authorization: 'ApiKey sk_live_secret_value' }))).toBe(key);
    // Recent keys are remembered only up to a length; a longer credential is still hashed the same way.
    const long = `sk_${'x'.repeat(5_000)}`;
    expect(rateLimitKey(request({ 'x-api-key': long }))).toMatch(/^key:[\w-]{43}$/);
    expect(rateLimitKey(request({ 'x-api-key': long }))).toBe(rateLimitKey(request({ authorization: `ApiKey ${long}` })));
    expect(rateLimitKey(request({ 'x-api-key': long }))).not.toBe(key);
    const v6 = (ip: string) => rateLimitKey({ method: 'GET', ip, headers: {} } as never);
    expect(v6('2001:db8:1:2::1')).toBe(v6('2001:db8:1:2:ffff::9')); // one /64, one bucket
    // Without a verified credential (a public route) a credential header does not buy a fresh bucket: the IP counts.
    expect(rateLimitKey({ method: 'GET', ip: '10.0.0.1', headers: { 'x-api-key': 'x' } } as never)).toBe('ip:10.0.0.1');
  });

  it('M4 a known path with another method: 405 with Allow', async () => {
    const res = seen(await app.inject({ method: 'DELETE', url: AUTHED, headers: { 'x-api-key': 'k' } }));
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toMatch(/GET/);
    expect(res.json()).toMatchObject({ type: `${P}method-not-allowed`, status: 405, instance: AUTHED });
  });

  it('M4 malformed URL encoding: 400 problem', async () => {
    const res = seen(await app.inject('/api/chatapp/connections/%'));
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ type: `${P}validation`, status: 400, detail: 'The request URL is malformed.' });
    // Answered before any hook runs, so the baseline security headers are set by hand.
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toBe(res.json().request_id);
  });

  it('M4 parser 413 for a 2 MiB JSON body', async () => {
    const payload = JSON.stringify({ token: 'x'.repeat(2 * 1024 * 1024) });
    const res = seen(await app.inject({ method: 'POST', url: SIGN_UP, headers: { 'content-type': 'application/json' }, payload }));
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ type: `${P}payload-too-large`, status: 413 });
  });

  it('M4 malformed JSON and a wrong Content-Type: problems', async () => {
    const post = (type: string, payload: string) => app.inject({ method: 'POST', url: SIGN_UP, headers: { 'content-type': type }, payload });
    expect(seen(await post('application/json', '{"token": ')).json().type).toBe(`${P}malformed-body`);
    expect(seen(await post('text/xml', '<token/>')).json().type).toBe(`${P}unsupported-media-type`);
    expect(seen(await post('application/json', '')).json().type).toBe(`${P}malformed-body`);
  });

  describe('over a socket (inject skips Node’s HTTP parser)', () => {
    let port: number;
    beforeAll(async () => {
      await app.listen({ port: 0, host: '127.0.0.1' });
      port = (app.server.address() as { port: number }).port;
    });

    it('K7 header and request timeouts are set on the server', () => {
      expect(app.server.headersTimeout).toBe(10_000);
      expect(app.server.requestTimeout).toBe(30_000);
      expect(app.server.keepAliveTimeout).toBe(72_000);
    });

    // Node's parser rejects the request before Fastify builds one, so this answer comes from our
    // clientErrorHandler: problem+json, but without `instance` (no URL was parsed).
    it.each([
      ['A2 a 16 KB header', `GET ${AUTHED} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${'a'.repeat(16 * 1024)}\r\n\r\n`],
      ['an over-long URL', `GET ${AUTHED}?q=${'a'.repeat(10 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ])('%s: 431 headers-too-large problem', async (_name, request) => {
      const res = await raw(port, request);
      expect(res.status).toBe(431);
      expect(res.headers).toContain('content-type: application/problem+json');
      expect(res.headers).toContain('x-content-type-options: nosniff');
      const body = JSON.parse(res.body);
      expect(body).toMatchObject({ type: `${P}headers-too-large`, status: 431, title: expect.any(String), detail: expect.any(String) });
      expect(res.headers).toContain(`x-request-id: ${body.request_id}`);
      errors.push({ status: 431, contentType: 'application/problem+json', body: res.body });
    });

    it('A2 an 8 KB X-API-Key: 431, not a 500', async () => {
      const res = await raw(port, `GET ${AUTHED} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${'a'.repeat(8 * 1024)}\r\n\r\n`);
      expect(res.status).toBe(431);
    });

    it('M4 bytes that are not HTTP: 400 problem', async () => {
      const res = await raw(port, 'HELLO\r\n\r\n');
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ type: `${P}malformed-body`, status: 400 });
      errors.push({ status: 400, contentType: 'application/problem+json', body: res.body });
    });

    it('M4 malformed URL encoding over the socket: 400 problem', async () => {
      const res = await raw(port, 'GET /% HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(res.status).toBe(400);
      expect(res.headers).toContain('content-type: application/problem+json');
      expect(JSON.parse(res.body)).toMatchObject({ type: `${P}validation`, instance: '/%' });
    });
  });
});

describe('http hygiene with tiny limits', () => {
  // One app for both: their keys and IPs differ, and that independence is the point.
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared({ env: { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '2' } });
  });

  it('K1 a burst over one key: 429 rate-limited with Retry-After; other keys and IPs unaffected', async () => {
    // Keys made from another IP: sign-up is a public route, limited per IP.
    const keys = async () => {
      const owner = seen(
        await app.inject({
          method: 'POST',
          url: SIGN_UP,
          remoteAddress: '10.7.7.7',
          payload: { email: 'burst@example.test', password: 'correct horse battery staple', name: 'Burst', workspace_name: 'Burst', workspace_slug: 'burst' },
        }),
      ).json();
      const create = (name: string) =>
        app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: `Bearer ${owner.session.access_token}` }, payload: { name } });
      return [(await create('a')).json().secret as string, (await create('b')).json().secret as string];
    };
    const [keyA, keyB] = await keys();
    const call = (key: string) => app.inject({ url: AUTHED, headers: { 'x-api-key': key } });
    for (let i = 0; i < 3; i++) expect((await call(keyA!)).statusCode).not.toBe(429);
    const limited = seen(await call(keyA!));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-limit']).toBe('3');
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-content-type-options']).toBe('nosniff');
    expect(limited.json()).toMatchObject({ type: `${P}rate-limited`, status: 429, instance: AUTHED });
    // The same key by the Authorization header shares the bucket; another key has its own.
    expect((await app.inject({ url: AUTHED, headers: { authorization: `ApiKey ${keyA}` } })).statusCode).toBe(429);
    const other = await call(keyB!);
    expect(other.statusCode).not.toBe(429);
    expect(other.headers['ratelimit-remaining']).toBe('2');
    // The IP that sent the burst still has its own (per-IP) bucket on public routes.
    expect((await app.inject({ url: PUBLIC })).headers['ratelimit-remaining']).toBe('1');
  });

  it('K2 a burst from one IP on a public route: 429 for it, not for another IP', async () => {
    const from = (ip: string) => app.inject({ url: PUBLIC, remoteAddress: ip });
    expect((await from('10.0.0.1')).statusCode).not.toBe(429);
    expect((await from('10.0.0.1')).statusCode).not.toBe(429);
    const limited = seen(await from('10.0.0.1'));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.json().type).toBe(`${P}rate-limited`);
    expect((await from('10.0.0.2')).statusCode).not.toBe(429);
    // An invented credential on a public route does not escape the IP's limit.
    expect((await app.inject({ url: PUBLIC, remoteAddress: '10.0.0.1', headers: { 'x-api-key': 'fresh' } })).statusCode).toBe(429);
  });

  it('L8 HSTS in production only', async () => {
    const production = await build({ env: { NODE_ENV: 'production', SECRET_KEY: 's'.repeat(40), PUBLIC_URL: 'https://api.example' } });
    expect((await production.inject(METADATA)).headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
  });
});

// Runs last: bad-inputs M1, M2 over every error answer of this file.
it('M1 M2 every error above is problem+json with the contract fields and nothing internal', () => {
  expect(errors.length).toBeGreaterThan(10);
  for (const { status, contentType, body } of errors) {
    expect(contentType).toMatch(/^application\/problem\+json/);
    const json = JSON.parse(body);
    expect(json).toMatchObject({
      type: expect.stringMatching(/^https:\/\/chatapp\.example\/problems\//),
      title: expect.any(String),
      status,
      detail: expect.any(String),
    });
    expect(body).not.toMatch(
      /\bat .+:\d+:\d+|node_modules|\.ts:\d|\/work\/|\/tmp\/|\/home\/|FST_ERR|"statusCode"|"code"|\bselect\b.+\bfrom\b|\binsert into\b/i,
    );
  }
});
