// What every API client shares: credentials as openapi-fetch middleware (never sent to another
// origin than baseUrl), retries with backoff on 429/503 honouring Retry-After, a User-Agent.
import createClient, { type Client, type Middleware } from 'openapi-fetch';

/** A credential: an API key (`X-API-Key`) or a bearer token (owner JWT, Connect access token). */
export type Credential = { apiKey: string } | { bearer: string };
/**
 * `auth`: a fixed credential, or a function asked before every request (e.g. an OAuth token
 * that refreshes itself); a string it returns is a bearer token.
 */
export type Auth = Credential | (() => Credential | string | Promise<Credential | string>);

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retries off). */
  maxRetries?: number;
  /** The first backoff ceiling in ms, doubled per retry (default 500). */
  baseDelayMs?: number;
  /** The longest wait in ms (default 30 000). A Retry-After longer than this is not waited for: the answer is returned. */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** The server's origin, e.g. `http://127.0.0.1:3000` (the paths carry `/api/...`). */
  baseUrl: string;
  auth?: Auth;
  retry?: RetryOptions | false;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
  userAgent?: string;
}

export const DEFAULT_USER_AGENT = 'chatapp-clients-ts/1.0.0';
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const RETRY_STATUS = new Set([429, 503]);

async function headerFor(auth: Auth): Promise<[string, string]> {
  const value = typeof auth === 'function' ? await auth() : auth;
  if (typeof value === 'string') return ['Authorization', `Bearer ${value}`];
  if ('apiKey' in value) return ['X-API-Key', value.apiKey];
  return ['Authorization', `Bearer ${value.bearer}`];
}

/** Adds the credential to requests for baseUrl's origin only. */
export function authMiddleware(auth: Auth, baseUrl: string): Middleware {
  const origin = new URL(baseUrl).origin;
  return {
    async onRequest({ request }) {
      if (new URL(request.url).origin !== origin) return undefined;
      const [name, value] = await headerFor(auth);
      request.headers.set(name, value);
      return request;
    },
  };
}

/** Milliseconds a Retry-After value asks for (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A fetch that retries 429 and 503 (any method: the server did not act on them), and network
 * errors only where repeating cannot do a thing twice: idempotent methods, or a request with an
 * `Idempotency-Key`. Waits Retry-After when sent, else exponential backoff with full jitter.
 */
export function retryingFetch(base: (request: Request) => Promise<Response>, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const { maxRetries = 3, baseDelayMs = 500, maxDelayMs = 30_000 } = options;
  return async (request) => {
    // A body can be read once: every attempt sends a clone of this untouched original.
    const original = request.clone();
    const replayable = IDEMPOTENT.has(request.method) || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
      let response: Response;
      try {
        response = await base(attempt === 0 ? request : original.clone());
      } catch (error) {
        if (!replayable || attempt >= maxRetries || request.signal.aborted) throw error;
        await sleep(backoff, request.signal);
        continue;
      }
      if (!RETRY_STATUS.has(response.status) || attempt >= maxRetries) return response;
      const asked = retryAfterMs(response.headers.get('retry-after'));
      if (asked !== undefined && asked > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(asked ?? backoff, request.signal);
    }
  };
}

/** An openapi-fetch client for one API's `paths`, with auth, retries and User-Agent. */
export function createApiClient<Paths extends {}>(options: ClientOptions): Client<Paths> {
  const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<Paths>({
    baseUrl: options.baseUrl,
    fetch: options.retry === false ? base : retryingFetch(base, options.retry),
    headers: { 'User-Agent': options.userAgent ?? DEFAULT_USER_AGENT },
    // A redirect would carry X-API-Key to wherever it points: 3xx answers come back as they are.
    redirect: 'manual',
  });
  if (options.auth) client.use(authMiddleware(options.auth, options.baseUrl));
  return client;
}
