// Rate limits (@fastify/rate-limit) for every route registered after this plugin: per
// credential where the operation authenticated one, per client IP elsewhere.
// Answers carry RateLimit-Limit/-Remaining/-Reset (the IETF draft's separate fields, the
// plugin's `enableDraftSpec`); a 429 adds Retry-After and is our problem+json. Besides, an IP
// that failed authentication too often gets 429 for its credentials, and so does a revoked or
// expired credential presented too often (bad-inputs K3, K10-K12, below).
//
// The store is in memory and PER INSTANCE: with N instances a client can get N times the limit.
// A shared store (the plugin's Redis option, or one on our database) would be needed to make
// the limit global; the README's "Limits" section says so.
import { hash, randomBytes } from 'node:crypto';
import fp from 'fastify-plugin';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  AUTH_FAILURE_IPS,
  AUTH_FAILURE_WINDOW_MS,
  DEAD_FAILURES_PER_WORKSPACE_FACTOR,
  deadCredentialWorkspace,
  decorateDeadCredentials,
  onAuthFailure,
  presentedCredential,
} from '../auth/auth-failures.js';
import { HttpProblem } from '../lib/problems.js';
import { setCapped } from '../lib/capped-map.js';

// The bucket key is SHA-256 of a secret that lives only in this process followed by the
// credential, so neither the credential nor anything that could be checked against a guess of it
// is stored or logged. (Limits are per instance, so the secret need not survive a restart.) The
// digest is never given to anyone to verify, so the prefix construction needs no HMAC, and
// one-shot hash() is much cheaper than createHmac() on every request.
const keySecret = randomBytes(32).toString('base64url');

function credentialKey(credential: string): string {
  return `key:${hash('sha256', keySecret + credential, 'base64url')}`;
}

export function rateLimitKey(request: FastifyRequest): string {
  // The limit runs after authentication (server/apis/area.ts): on an operation that needs a
  // credential, `auth` is set and the bucket is that verified credential's; an invented one was
  // answered 401 before reaching here and counted against its IP below (bad-inputs K3).
  const value = request.auth ? presentedCredential(request) : undefined;
  // IPv6 clients are counted per /64, as the plugin's own key does: one host holds a whole /64.
  return value ? credentialKey(value) : `ip:${normalizeIP(request.ip)}`;
}

/** The 429 of every bucket: `rate-limited` with Retry-After in whole seconds. */
export function limited(ttlMs: number): HttpProblem {
  const seconds = String(Math.max(1, Math.ceil(ttlMs / 1000)));
  return new HttpProblem(429, 'rate-limited', `Too many requests; retry after ${seconds} seconds.`, {}, { 'retry-after': seconds });
}

/** The client a token request names, in its body or its HTTP Basic credentials (RFC 6749 §2.3.1). */
function clientIdOf(request: FastifyRequest): string | undefined {
  const body = request.body as { client_id?: unknown } | undefined;
  if (body && typeof body.client_id === 'string' && body.client_id) return body.client_id.slice(0, 200);
  const basic = /^basic\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (!basic) return undefined;
  const user = Buffer.from(basic, 'base64').toString('utf8').split(':')[0];
  return user ? decodeURIComponent(user.replace(/\+/g, ' ')).slice(0, 200) : undefined;
}

/** The plugin's in-memory store (toad-cache LRU); it has no typings of its own. */
interface Counts {
  incr(key: string, done: (error: Error | null, count: { current: number; ttl: number }) => void, timeWindow: number, max: number): void;
}
const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => Counts;
const WINDOW_MS = 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The global limit of a contract operation, as one synchronous step of its pipeline
     * (server/apis/area.ts): the same buckets as the plugin's hook, without its promises.
     */
    limitOperation(request: FastifyRequest, reply: FastifyReply): void;
  }
}

export default fp(
  async function rateLimits(app: FastifyInstance) {
    decorateDeadCredentials(app); // the verifiers of every API mark dead credentials on the request
    const { rateLimitPerMinute, rateLimitIpPerMinute, authFailuresPerIp } = app.config;
    // One store for the plugin's hook (pages, routes outside the contract) and the operations'
    // pipelines, so a client's pages and calls fill one bucket. LRU entries: enough that a flood
    // of new keys does not evict live buckets quickly.
    const counts = new LocalStore(false, false, 50_000);
    const maxFor = (key: string) => (key.startsWith('key:') ? rateLimitPerMinute : rateLimitIpPerMinute);
    const onExceeded = (request: FastifyRequest, key: string) => request.log.warn({ limiter: key.slice(0, 16) }, 'rate limit exceeded');
    await app.register(rateLimit, {
      global: true,
      hook: 'onRequest', // after the operation's authentication (a route hook before it), before the body is read
      timeWindow: WINDOW_MS,
      max: (_request, key) => maxFor(key),
      keyGenerator: rateLimitKey,
      store: function shared() {
        return counts;
      } as never,
      enableDraftSpec: true,
      errorResponseBuilder: (_request, context) => limited(context.ttl),
      onExceeded,
    });
    app.decorate('limitOperation', (request: FastifyRequest, reply: FastifyReply) => {
      const key = rateLimitKey(request);
      const max = maxFor(key);
      let count = { current: 0, ttl: 0 };
      counts.incr(key, (_error, c) => (count = c), WINDOW_MS, max);
      const reset = Math.ceil(count.ttl / 1000);
      if (count.current <= max) {
        reply
          .header('ratelimit-limit', max)
          .header('ratelimit-remaining', max - count.current)
          .header('ratelimit-reset', reset);
        return;
      }
      onExceeded(request, key);
      reply.header('ratelimit-limit', max).header('ratelimit-remaining', 0).header('ratelimit-reset', reset);
      throw limited(count.ttl);
    });
    // Second buckets where one alone leaves a gap (bad-inputs K2): starting a Login session is
    // also limited per IP (one IP cycling through keys), and the token endpoint also per
    // client_id (one client from many IPs). Separate key prefixes keep them apart from the
    // buckets above in the shared store.
    // They are hooks of those two routes only, so no other request pays for them.
    const startPerIp = app.createRateLimit({ max: rateLimitIpPerMinute, keyGenerator: (r) => `start-ip:${normalizeIP(r.ip)}` });
    const tokenPerClient = app.createRateLimit({ max: rateLimitPerMinute, keyGenerator: (r) => `client:${clientIdOf(r)}` });
    const limitStart = async (request: FastifyRequest) => {
      const limit = await startPerIp(request);
      if (!limit.isAllowed && limit.isExceeded) throw limited(limit.ttl);
    };
    const limitToken = async (request: FastifyRequest) => {
      if (!clientIdOf(request)) return;
      const limit = await tokenPerClient(request);
      if (!limit.isAllowed && limit.isExceeded) throw limited(limit.ttl);
    };
    app.addHook('onRoute', (route) => {
      if (![route.method].flat().includes('POST')) return;
      if (route.url === '/v1/auth/chatapp/start') route.onRequest = [...[route.onRequest ?? []].flat(), limitStart];
      if (route.url === '/api/oauth/token') route.preValidation = [...[route.preValidation ?? []].flat(), limitToken];
    });
    // Failed authentications (bad-inputs K3, K10-K12, server/auth/auth-failures.ts): the
    // authenticators count a 401 into the bucket of its IP, or of its dead credential and that
    // credential's workspace. Here, before any lookup or hashing, an IP with authFailuresPerIp of
    // them in the window gets 429 for anything that carries a credential (a valid one included),
    // while its requests without one keep their 401; a dead credential over its own count or its
    // workspace's gets 429 too, and nothing else is held back by it.
    const window = { timeWindow: AUTH_FAILURE_WINDOW_MS, cache: AUTH_FAILURE_IPS };
    const perIp = app.createRateLimit({ ...window, max: authFailuresPerIp, keyGenerator: (r) => `auth-failures:${normalizeIP(r.ip)}` });
    type Count = Awaited<ReturnType<typeof perIp>>;
    type Counted = Extract<Count, { isAllowed: false }>;
    /** At the count: the next request is refused. Past it: this one is. */
    const full = (count: Count): count is Counted => !count.isAllowed && count.remaining === 0;
    const exceeded = (count: Count): count is Counted => !count.isAllowed && count.isExceeded;
    // Dead credentials seen by this instance, by bucket key, with their workspace: a request
    // presenting one is checked against both buckets before the lookup that would find it dead.
    const deadSeen = new Map<string, string>();
    const presentedKey = (r: FastifyRequest) => credentialKey(presentedCredential(r) ?? '');
    const workspaceOf = (r: FastifyRequest) => deadCredentialWorkspace(r) ?? deadSeen.get(presentedKey(r));
    const perCredential = app.createRateLimit({ ...window, max: authFailuresPerIp, keyGenerator: (r) => `dead-credential:${presentedKey(r)}` });
    const perWorkspace = app.createRateLimit({
      ...window,
      max: authFailuresPerIp * DEAD_FAILURES_PER_WORKSPACE_FACTOR,
      keyGenerator: (r) => `dead-workspace:${workspaceOf(r)}`,
    });
    // No request can be over a count unless this instance recorded a failure within one window:
    // until then, requests skip the lookup.
    let lastFailure = -Infinity;
    let lastDeadFailure = -Infinity;
    onAuthFailure(app.platform, async (request, deadIn) => {
      if (deadIn === undefined) {
        lastFailure = Date.now();
        await perIp(request);
        return undefined;
      }
      lastDeadFailure = Date.now();
      setCapped(deadSeen, presentedKey(request), deadIn, AUTH_FAILURE_IPS);
      const counts = await Promise.all([perCredential(request), perWorkspace(request)]);
      // Past the count already (a dead credential this instance had not seen, of a workspace over
      // its count): the 429 the check below would have given.
      const over = counts.find(exceeded);
      return over && refused(request, over.ttl, 'dead credential');
    });
    function refused(request: FastifyRequest, ttl: number, what: string): HttpProblem {
      request.log.warn({ limiter: 'auth-failures' }, `credential refused: too many failed authentications from this ${what}`);
      return limited(ttl);
    }
    const refuseFailing = async (request: FastifyRequest) => {
      if (Date.now() - lastFailure < AUTH_FAILURE_WINDOW_MS) {
        const count = await perIp(request, { increment: false });
        if (full(count)) throw refused(request, count.ttl, 'IP');
      }
      if (Date.now() - lastDeadFailure < AUTH_FAILURE_WINDOW_MS && deadSeen.has(presentedKey(request))) {
        for (const count of await Promise.all([perCredential(request, { increment: false }), perWorkspace(request, { increment: false })])) {
          if (full(count)) throw refused(request, count.ttl, 'dead credential');
        }
      }
    };
    // A callback hook: the usual request (no recent failure) passes without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      const now = Date.now();
      if ((now - lastFailure >= AUTH_FAILURE_WINDOW_MS && now - lastDeadFailure >= AUTH_FAILURE_WINDOW_MS) || presentedCredential(request) === undefined)
        return done();
      refuseFailing(request).then(() => done(), done);
    });
  },
  { name: 'rate-limits', dependencies: ['problems'] },
);
