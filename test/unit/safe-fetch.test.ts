// Group G of the bad-inputs catalogue (SSRF) against the outbound client, plus its limits.
// Only 127.0.0.0/8 is ever contacted: names go through an injected DNS stub, and every
// refused URL points at a live server on 127.0.0.1 whose connections are counted.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSafeFetch, FetchFailedError, UnsafeUrlError, type Resolver, type SafeFetch } from '#server/lib/safe-fetch.js';
import { checkUrlSyntax, isAllowedAddress } from '#server/lib/url-policy.js';

interface Target {
  server: http.Server;
  port: number;
  connections: number;
  paths: string[];
}

const BIG = 50 * 1024 * 1024;
let bigSent = 0;
let bigClosed: Promise<void> = Promise.resolve();

function handler(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://x');
  switch (url.pathname) {
    case '/redirect':
      res.writeHead(Number(url.searchParams.get('code') ?? 302), { location: url.searchParams.get('to') ?? '/' }).end();
      return;
    case '/loop':
      res.writeHead(302, { location: '/loop' }).end();
      return;
    case '/echo':
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.headers));
      return;
    case '/close':
      res.writeHead(200, { connection: 'close' }).end('closing');
      return;
    case '/hang':
      return; // never answers
    case '/stall':
      res.writeHead(200, { 'content-length': 100 }).write('partial'); // headers, then nothing
      return;
    case '/big': {
      // Honours backpressure, so what it manages to send is what the client let in.
      const chunk = Buffer.alloc(64 * 1024, 97);
      bigSent = 0;
      bigClosed = new Promise((resolve) => res.once('close', resolve));
      res.writeHead(200, { 'content-length': BIG });
      const pump = () => {
        while (bigSent < BIG && !res.destroyed) {
          bigSent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    default:
      res.end('hello');
  }
}

async function listen(host: string, port = 0): Promise<Target> {
  const t: Target = { server: http.createServer(), port: 0, connections: 0, paths: [] };
  t.server.on('connection', () => t.connections++);
  t.server.on('request', (req, res) => {
    t.paths.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => t.server.once('error', reject).listen(port, host, resolve));
  t.port = (t.server.address() as AddressInfo).port;
  return t;
}

// allowed: 127.0.0.2:PORT (the one address the test policy permits); victim: 127.0.0.1 on the
// same PORT, so a guard that let a rebinding through would reach it rather than fail to connect.
let allowed: Target;
let victim: Target;
let other: Target; // 127.0.0.2, another port: another origin
let PORT = 0;

const DNS: Record<string, string[]> = {
  'metadata.google.internal': ['169.254.169.254'],
  'intranet.test': ['10.0.0.5'],
  'mixed.test': ['127.0.0.2', '127.0.0.1'],
  'public-and-loopback.test': ['93.184.216.34', '127.0.0.1'],
  'loopback.test': ['127.0.0.1'],
  'allowed.test': ['127.0.0.2'],
};
let lookups: string[] = [];
const stub: Resolver = async (hostname) => {
  lookups.push(hostname);
  const found = DNS[hostname];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
};

const onlyLoopback2 = (ip: string) => ip === '127.0.0.2';
const guards: SafeFetch[] = [];
function guard(extra: Partial<Parameters<typeof createSafeFetch>[0]> = {}): SafeFetch {
  const g = createSafeFetch({ httpsOnly: false, allowedPorts: [PORT, other.port], lookup: stub, timeoutMs: 2_000, ...extra });
  guards.push(g);
  return g;
}
let strict: SafeFetch; // production address policy: public targets only
let lab: SafeFetch; // the test policy: 127.0.0.2 allowed as well

beforeAll(async () => {
  allowed = await listen('127.0.0.2');
  for (let i = 0; !victim; i++) {
    try {
      victim = await listen('127.0.0.1', allowed.port);
    } catch (err) {
      if (i > 5) throw err;
      allowed.server.close();
      allowed = await listen('127.0.0.2');
    }
  }
  PORT = allowed.port;
  other = await listen('127.0.0.2');
  strict = guard();
  lab = guard({ allowPrivate: onlyLoopback2 });
});

afterAll(async () => {
  await Promise.all(guards.map((g) => g.close()));
  for (const t of [allowed, victim, other]) {
    t.server.closeAllConnections();
    await new Promise((resolve) => t.server.close(resolve));
  }
});

beforeEach(() => {
  lookups = [];
});

const connections = () => allowed.connections + victim.connections + other.connections;
const withPort = (u: string) => u.replaceAll('PORT', String(PORT));

async function expectRefused(g: SafeFetch, url: string, status: 400 | 422) {
  const before = connections();
  const err = await g(url).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UnsafeUrlError);
  expect((err as UnsafeUrlError).status).toBe(status);
  expect(connections()).toBe(before);
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe('G. server-side request forgery', () => {
  it.each(['http://127.0.0.1:PORT/', 'http://localhost:PORT/', 'http://0.0.0.0:PORT/', 'http://0:PORT/'])(
    'G1 loopback and unspecified are refused: %s',
    async (raw) => {
      const url = withPort(raw);
      expect(checkUrlSyntax(url, { allowedPorts: [PORT], allowPrivate: onlyLoopback2 })).toMatchObject({ ok: false, status: 422 });
      await expectRefused(strict, url, 422);
      await expectRefused(lab, url, 422);
    },
  );

  it.each(['10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1'])('G2 private and CGNAT addresses are refused: %s', async (host) => {
    await expectRefused(strict, withPort(`http://${host}:PORT/`), 422);
    await expectRefused(lab, withPort(`http://${host}:PORT/`), 422);
  });

  it.each(['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://metadata.google.internal/computeMetadata/v1/'])(
    'G3 metadata endpoints are refused, even when all private targets are allowed: %s',
    async (url) => {
      await expectRefused(strict, url, 422);
      await expectRefused(guard({ allowPrivate: () => true }), url, 422);
    },
  );

  it('G3 metadata.google.internal is refused at connect, after the stub answered 169.254.169.254', async () => {
    expect(checkUrlSyntax('http://metadata.google.internal/', {}).ok).toBe(true);
    await expectRefused(strict, 'http://metadata.google.internal/', 422);
    expect(lookups).toEqual(['metadata.google.internal']);
  });

  it.each(['[::1]', '[::]', '[fc00::1]', '[fe80::1]', '[ff02::1]', '[::ffff:127.0.0.1]', '[::ffff:a9fe:a9fe]'])(
    'G4 IPv6 non-public addresses are refused: %s',
    async (host) => {
      await expectRefused(strict, withPort(`http://${host}:PORT/`), 422);
      await expectRefused(lab, withPort(`http://${host}:PORT/`), 422);
    },
  );

  // ipaddr.js alone calls several of these unicast: the embedded IPv4 address decides.
  it.each([
    ['::7f00:1', false], // IPv4-compatible 127.0.0.1
    ['64:ff9b::7f00:1', false], // NAT64 of 127.0.0.1
    ['64:ff9b::a9fe:a9fe', false], // NAT64 of the metadata address
    ['2002:7f00:1::1', false], // 6to4 of 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', false], // Teredo, client 127.0.0.1
    ['fec0::1', false], // site-local
    ['2001:db8::1', false], // documentation
    ['64:ff9b::808:808', true], // NAT64 of a public address
    ['2606:4700::1111', true],
  ] as const)('G4 embedded IPv4 forms are decoded: %s allowed=%s', (ip, expected) => {
    expect(isAllowedAddress(ip, { allowPrivate: onlyLoopback2 })).toBe(expected);
  });

  it.each(['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '0x7f.1'])('G5 numeric IPv4 forms are refused: %s', async (host) => {
    const url = withPort(`http://${host}:PORT/`);
    expect(new URL(url).hostname).toBe('127.0.0.1');
    await expectRefused(strict, url, 422);
    await expectRefused(lab, url, 422);
  });

  it.each([
    ['%6c%6f%63%61%6c%68%6f%73%74', 'localhost'],
    ['%31%32%37.0.0.1', '127.0.0.1'],
    ['ⓛⓞⓒⓐⓛⓗⓞⓢⓣ', 'localhost'],
    ['１２７.０.０.１', '127.0.0.1'],
    ['127。0。0。1', '127.0.0.1'],
  ])('G6 encoded and Unicode hosts are refused: %s', async (host, parsed) => {
    const url = withPort(`http://${host}:PORT/`);
    expect(new URL(url).hostname).toBe(parsed);
    await expectRefused(strict, url, 422);
    await expectRefused(lab, url, 422);
    expect(lookups).toEqual([]);
  });

  it.each(['http://user@evil@127.0.0.1:PORT/', 'http://evil.test@127.0.0.1:PORT/', 'http://127.0.0.1:PORT\\@evil.test/', 'http://user:pass@127.0.0.2:PORT/'])(
    'G7 userinfo tricks are refused: %s',
    async (raw) => {
      const url = withPort(raw);
      expect(new URL(url).hostname).toMatch(/^127\.0\.0\.[12]$/);
      await expectRefused(strict, url, 422);
      await expectRefused(lab, url, 422); // the last one targets the allowed address: userinfo alone refuses it
    },
  );

  it('G8 a name resolving to 10.0.0.5 is refused', async () => {
    await expectRefused(lab, withPort('http://intranet.test:PORT/'), 422);
    await expect(lab.check(withPort('http://intranet.test:PORT/'))).rejects.toMatchObject({ status: 422 });
  });

  it('G8 a name resolving to an allowed and a loopback address is refused: every address must be allowed', async () => {
    await expectRefused(lab, withPort('http://mixed.test:PORT/'), 422); // 127.0.0.2 allowed, 127.0.0.1 not
    await expectRefused(strict, withPort('http://public-and-loopback.test:PORT/'), 422);
  });

  it('G9 rebinding: allowed address first, 127.0.0.1 next, is refused at connect', async () => {
    let calls = 0;
    const rebinding = guard({ allowPrivate: onlyLoopback2, lookup: async () => [{ address: calls++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }] });
    const first = await rebinding(withPort('http://rebind.test:PORT/close'));
    expect(first.status).toBe(200); // reached 127.0.0.2; the server closes, so the next request reconnects
    await expectRefused(rebinding, withPort('http://rebind.test:PORT/close'), 422);
    expect(calls).toBe(2);
    expect(victim.connections).toBe(0);
  });

  it('G9 rebinding: a public address at accept time, 127.0.0.1 at connect, is refused', async () => {
    let calls = 0;
    const rebinding = guard({ lookup: async () => [{ address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }] });
    const url = withPort('http://rebind.test:PORT/');
    await expect(rebinding.check(url)).resolves.toBeInstanceOf(URL); // nothing connects to the public address
    await expectRefused(rebinding, url, 422);
    expect(victim.connections).toBe(0);
  });

  it.each(['http://127.0.0.1:PORT/', 'http://loopback.test:PORT/', 'http://2130706433:PORT/'])(
    'G10 an allowed URL redirecting to %s is refused, 0 requests there',
    async (to) => {
      const media = guard({ allowPrivate: onlyLoopback2, maxRedirects: 3 });
      const url = withPort(`http://127.0.0.2:PORT/redirect?to=${encodeURIComponent(withPort(to))}`);
      await expect(media(url)).rejects.toMatchObject({ name: 'UnsafeUrlError', status: 422 });
      expect(victim.connections).toBe(0);
      // Webhooks follow none: the 3xx comes back as is.
      expect((await lab(url)).status).toBe(302);
      expect(victim.connections).toBe(0);
    },
  );

  it.each(['file:///etc/passwd', 'gopher://127.0.0.2:PORT/_x', 'data:text/plain,hi', 'ftp://127.0.0.2:PORT/', 'javascript:alert(1)', 'ws://127.0.0.2:PORT/'])(
    'G11 non-http schemes are refused before any I/O: %s',
    async (raw) => {
      await expectRefused(lab, withPort(raw), 400);
      expect(lookups).toEqual([]);
    },
  );

  it('G12 http: is refused when only https is allowed', async () => {
    const production = guard({ httpsOnly: true, allowPrivate: onlyLoopback2 });
    await expectRefused(production, withPort('http://127.0.0.2:PORT/'), 422);
    await expectRefused(production, 'http://allowed.test/', 422);
    expect(lookups).toEqual([]);
  });

  it.each([
    ['22', 422],
    ['25', 422],
    ['6379', 422],
    ['0', 400],
    ['65536', 400],
  ] as const)('G12 port %s is refused with %s', async (port, status) => {
    const production = guard({ httpsOnly: true, allowedPorts: [], allowPrivate: onlyLoopback2 });
    await expectRefused(production, `https://127.0.0.2:${port}/`, status);
    await expectRefused(production, `https://allowed.test:${port}/`, status);
    expect(lookups).toEqual([]);
  });

  it.each([
    ['CR/LF', 'http://127.0.0.2:PORT/a\r\nX-Injected: 1'],
    ['LF', 'http://127.0.0.2:PORT/\nfoo'],
    ['tab', 'http://127.0.0.2:PORT/\tfoo'],
    ['NUL', 'http://127.0.0.2:PORT/\0'],
    ['over 2,048 characters', `http://127.0.0.2:PORT/${'a'.repeat(2_100)}`],
  ])('G13 %s is refused with 400', async (_, raw) => {
    await expectRefused(lab, withPort(raw), 400);
  });
});

describe('safe fetch of allowed targets', () => {
  it('fetches an allowed target, by address and by name', async () => {
    const byAddress = await lab(withPort('http://127.0.0.2:PORT/hello'));
    expect(byAddress).toMatchObject({ status: 200, truncated: false, url: withPort('http://127.0.0.2:PORT/hello') });
    expect(byAddress.body.toString()).toBe('hello');
    expect((await lab(withPort('http://allowed.test:PORT/hello'))).status).toBe(200);
    expect(lookups).toEqual(['allowed.test']);
  });

  it('F6 a 3xx is not followed with maxRedirects 0', async () => {
    allowed.paths = [];
    const res = await lab(withPort('http://127.0.0.2:PORT/redirect?to=/hello&code=301'));
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('/hello');
    expect(allowed.paths).toEqual(['/redirect?to=/hello&code=301']);
  });

  it('follows allowed redirects up to maxRedirects, dropping credentials across origins', async () => {
    const media = guard({ allowPrivate: onlyLoopback2, maxRedirects: 3 });
    const same = await media(withPort('http://127.0.0.2:PORT/redirect?to=/hello'));
    expect(same).toMatchObject({ status: 200, url: withPort('http://127.0.0.2:PORT/hello') });

    const elsewhere = `http://127.0.0.2:${other.port}/echo`;
    const res = await media(withPort(`http://127.0.0.2:PORT/redirect?code=307&to=${encodeURIComponent(elsewhere)}`), {
      headers: { authorization: 'Bearer secret', cookie: 'sid=1', 'x-trace': 't1', host: 'evil.test' },
    });
    const seen = JSON.parse(res.body.toString());
    expect(res.url).toBe(elsewhere);
    expect(seen).toMatchObject({ 'x-trace': 't1', host: `127.0.0.2:${other.port}` });
    expect(seen).not.toHaveProperty('authorization');
    expect(seen).not.toHaveProperty('cookie');

    await expect(media(withPort('http://127.0.0.2:PORT/loop'))).rejects.toMatchObject({ name: 'FetchFailedError', reason: 'redirects' });
  });

  it('F7 a 50 MB response stops at the cap and memory stays flat', async () => {
    const before = process.memoryUsage();
    const res = await lab(withPort('http://127.0.0.2:PORT/big'));
    await bigClosed; // the connection was closed instead of drained
    const after = process.memoryUsage();
    expect(res).toMatchObject({ status: 200, truncated: true });
    expect(res.body.length).toBe(1024 * 1024);
    expect(bigSent).toBeLessThan(BIG / 2);
    expect(after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers)).toBeLessThan(BIG / 2);
  });

  it.each(['/hang', '/stall'])('F5 the timeout fires on a receiver that never answers or stalls: %s', async (path) => {
    const impatient = guard({ allowPrivate: onlyLoopback2, timeoutMs: 200 });
    const err = await failure(impatient(withPort(`http://127.0.0.2:PORT${path}`)));
    expect(err).toBeInstanceOf(FetchFailedError);
    expect((err as FetchFailedError).reason).toBe('timeout');
  });

  it('a resolver that does not answer within dnsTimeoutMs is a DNS failure, for the check and the fetch', async () => {
    const silent = guard({ lookup: () => new Promise(() => {}), dnsTimeoutMs: 20 });
    for (const attempt of [silent.check('http://slow.test/'), silent(withPort('http://slow.test:PORT/'))]) {
      const err = await attempt.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FetchFailedError);
      expect((err as FetchFailedError).reason).toBe('dns');
    }
  });

  it('a name that does not resolve is a DNS failure, not a refusal', async () => {
    const err = await failure(lab(withPort('http://nowhere.test:PORT/')));
    expect(err).toBeInstanceOf(FetchFailedError);
    expect((err as FetchFailedError).reason).toBe('dns');
  });
});
