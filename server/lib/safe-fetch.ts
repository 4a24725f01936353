// The one outbound HTTP client for user-given URLs (webhooks, header_url, media, automations).
// Checking a URL before the request is not enough: a name can resolve differently at connect
// (DNS rebinding), so the decision is made in undici's connect step on the address connected to.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { checkUrlSyntax, isAllowedAddress, isLocalhostName, type UrlPolicy } from './url-policy.js';

export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export interface SafeFetchOptions extends UrlPolicy {
  httpsOnly: boolean;
  /** DNS stub for tests; default: dns.promises.lookup with { all: true }. */
  lookup?: Resolver;
  /** Whole exchange, redirects and body included. */
  timeoutMs?: number;
  /**
   * One name's resolution (default 3 s). A resolver that gets no answer retries for 10 s or more
   * before it fails; a name that slow is treated as unresolvable, so a check answers promptly.
   */
  dnsTimeoutMs?: number;
  maxResponseBytes?: number;
  /** Webhooks: 0 (a 3xx is returned as is). Media fetches: 3. */
  maxRedirects?: number;
}

export interface SafeFetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

export interface SafeResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  /** The body was longer than maxResponseBytes; reading stopped there. */
  truncated: boolean;
  /** The final URL, after redirects. */
  url: string;
}

export type SafeFetch = ((url: string, init?: SafeFetchInit) => Promise<SafeResponse>) & {
  /** Accept-time check: syntax plus every address the name resolves to now. */
  check(url: string): Promise<URL>;
  close(): Promise<void>;
};

/** The URL is refused by policy: 400 for syntax or scheme, 422 for the target. */
export class UnsafeUrlError extends Error {
  constructor(
    readonly status: 400 | 422,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'UnsafeUrlError';
  }
}

export type FetchFailure = 'timeout' | 'dns' | 'reset' | 'refused' | 'redirects' | 'network';

/** The URL was acceptable but the exchange did not complete. */
export class FetchFailedError extends Error {
  constructor(
    readonly reason: FetchFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FetchFailedError';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// undici rejects most of these outright; Host must come from the URL, or a caller could reach
// another virtual host than the one checked.
const STRIPPED = [
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-length',
];
const CREDENTIALS = ['authorization', 'cookie'];

const defaultResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

const unbracket = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

export function createSafeFetch(options: SafeFetchOptions): SafeFetch {
  const { timeoutMs = 10_000, dnsTimeoutMs = 3_000, maxResponseBytes = 1024 * 1024, maxRedirects = 0 } = options;
  const resolver = options.lookup ?? defaultResolver;

  const checkSyntax = (raw: string): URL => {
    const result = checkUrlSyntax(raw, options);
    if (!result.ok) throw new UnsafeUrlError(result.status, result.reason);
    return result.url;
  };

  // Every address must pass (bad-inputs G8): which one the socket picks is not ours to choose.
  const resolveChecked = async (hostname: string) => {
    let addresses: Awaited<ReturnType<Resolver>>;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${dnsTimeoutMs} ms`)), dnsTimeoutMs);
    });
    try {
      addresses = await Promise.race([resolver(hostname), slow]);
    } catch (err) {
      throw new FetchFailedError('dns', `could not resolve ${hostname}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (addresses.length === 0) throw new FetchFailedError('dns', `${hostname} has no addresses`);
    if (addresses.some((a) => !isAllowedAddress(a.address, options))) throw new UnsafeUrlError(422, 'the host resolves to an address that is not allowed');
    return addresses;
  };

  // net.connect connects to exactly what this returns, so the checked address is the one used (bad-inputs G9).
  const lookup = ((
    hostname: string,
    opts: { family?: number | string; all?: boolean },
    cb: (err: Error | null, address?: unknown, family?: number) => void,
  ) => {
    resolveChecked(hostname).then(
      (all) => {
        const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : opts.family;
        const usable = family ? all.filter((a) => a.family === family) : all;
        if (usable.length === 0) return cb(new FetchFailedError('dns', `${hostname} has no IPv${family} address`));
        if (opts.all) cb(null, usable);
        else cb(null, usable[0].address, usable[0].family);
      },
      (err: Error) => cb(err),
    );
  }) as unknown as LookupFunction;

  const connector = buildConnector({ lookup, timeout: timeoutMs });
  const agent = new Agent({
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: (opts, callback) => {
      // Node skips the lookup for IP literals, so they are checked here.
      const host = unbracket(opts.hostname);
      if (isIP(host) && !isAllowedAddress(host, options)) return callback(new UnsafeUrlError(422, 'the address is not allowed'), null);
      connector(opts, callback);
    },
  });

  const safeFetch = (async (raw: string, init: SafeFetchInit = {}): Promise<SafeResponse> => {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new FetchFailedError('timeout', `no complete answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      let url = checkSyntax(raw);
      let method = (init.method ?? 'GET').toUpperCase();
      let body = init.body;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(init.headers ?? {})) if (!STRIPPED.includes(k.toLowerCase())) headers[k.toLowerCase()] = v;

      for (let hop = 0; ; hop++) {
        const res = await request(url, { dispatcher: agent, method, headers, body, signal: deadline.signal });
        const location = res.headers.location;
        if (maxRedirects > 0 && REDIRECTS.has(res.statusCode) && typeof location === 'string') {
          discard(res.body);
          if (hop >= maxRedirects) throw new FetchFailedError('redirects', `more than ${maxRedirects} redirects`);
          let next: URL;
          try {
            next = checkSyntax(new URL(location, url).href); // every hop gets the full check (bad-inputs G10)
          } catch (err) {
            throw err instanceof UnsafeUrlError ? err : new UnsafeUrlError(400, 'invalid redirect location');
          }
          if (next.origin !== url.origin) for (const h of CREDENTIALS) delete headers[h];
          if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
            if (method !== 'HEAD') method = 'GET';
            body = undefined;
            delete headers['content-type'];
          }
          url = next;
          continue;
        }
        const { buffer, truncated } = await readCapped(res.body, maxResponseBytes);
        const outHeaders: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) outHeaders[k] = v;
        return { status: res.statusCode, headers: outHeaders, body: buffer, truncated, url: url.href };
      }
    } catch (err) {
      throw classify(err);
    } finally {
      clearTimeout(timer);
    }
  }) as SafeFetch;

  safeFetch.check = async (raw) => {
    const url = checkSyntax(raw);
    const host = unbracket(url.hostname);
    if (!isIP(host) && !isLocalhostName(host)) await resolveChecked(host);
    return url;
  };
  safeFetch.close = () => agent.close();
  return safeFetch;
}

type Closable = { destroy(): void; on(event: 'error', fn: () => void): unknown };

// undici reports a body destroyed early as an AbortError event; nobody is listening any more.
function discard(stream: Closable) {
  stream.on('error', () => {});
  stream.destroy();
}

/** Keeps at most `cap` bytes; stopping early closes the connection instead of buffering the rest. */
async function readCapped(stream: AsyncIterable<Buffer> & Closable, cap: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of stream) {
    if (chunk.length > cap - size) {
      chunks.push(chunk.subarray(0, cap - size));
      size = cap;
      truncated = true;
      break; // ends the iterator, which destroys the stream
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  if (truncated) discard(stream);
  return { buffer: Buffer.concat(chunks, size), truncated };
}

const CODES: Record<string, FetchFailure> = {
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ETIMEDOUT: 'timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_FAIL: 'dns',
  EAI_NODATA: 'dns',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  UND_ERR_SOCKET: 'reset',
  ECONNREFUSED: 'refused',
};

// undici and net wrap errors (cause chains); callers only see our two types.
function classify(err: unknown): Error {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof UnsafeUrlError || e instanceof FetchFailedError) return e;
    const code = (e as { code?: string }).code;
    if (code && CODES[code]) return new FetchFailedError(CODES[code], (e as Error).message, { cause: err });
  }
  return new FetchFailedError('network', err instanceof Error ? err.message : String(err), { cause: err });
}
