// Rate limits (@fastify/rate-limit) for every route registered after this plugin: per
// credential where the operation authenticated one, per client IP elsewhere.
// Answers carry RateLimit-Limit/-Remaining/-Reset (the IETF draft's separate fields, the
// plugin's `enableDraftSpec`); a 429 adds Retry-After and is our problem+json. Besides, an IP
// that failed authentication too often gets 429 for its credentials, and so does a revoked or
// expired credential presented too often (bad-inputs K3, K10-K12, below).
//
// With REDIS_URL the buckets live in Redis (the plugin's RedisStore over ioredis, its
// convention), so every instance of a fleet fills the same ones and N instances give exactly the
// documented limits. Redis away: requests are served (fail open, one warning per outage, never a
// 500) and the limits resume when it returns (server/lib/redis.ts). Without REDIS_URL the store
// is in memory and PER INSTANCE: with N instances a client can get N times the limit, which the
// start-up log says once when the database is shared (PostgreSQL).
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
import { credentialDigester, decorateCredentialDigest, requestCredentialDigest, type CredentialDigest } from '../auth/credential-digest.js';
import { HttpProblem } from '../lib/problems.js';
import { setCapped } from '../lib/capped-map.js';
import type { SharedRedis } from '../lib/redis.js';

// The bucket key of a credential is its credential digest (server/auth/credential-digest.ts):
// keyed, so neither the credential nor anything that could be checked against a guess of it is
// stored (in Redis too) or logged, and the very digest authentication computed for its cache
// lookup on the same request, so a request hashes its credential once.
function credentialKeys(digest: CredentialDigest) {
  const credentialKey = (request: FastifyRequest, credential: string) => `key:${requestCredentialDigest(request, credential, digest)}`;
  const rateLimitKey = (request: FastifyRequest): string => {
    // The limit runs after authentication (server/apis/area.ts): on an operation that needs a
    // credential, `auth` is set and the bucket is that verified credential's; an invented one was
    // answered 401 before reaching here and counted against its IP below (bad-inputs K3).
    const value = request.auth ? presentedCredential(request) : undefined;
    // IPv6 clients are counted per /64, as the plugin's own key does: one host holds a whole /64.
    return value ? credentialKey(request, value) : `ip:${normalizeIP(request.ip)}`;
  };
  return { credentialKey, rateLimitKey };
}

/** The bucket key of a request, with a digest of this process's own (the app's comes from its platform). */
export const rateLimitKey = credentialKeys(credentialDigester()).rateLimitKey;

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

type Done = (error: Error | null, count: { current: number; ttl: number }) => void;
/** The plugin's stores (in memory: a toad-cache LRU; RedisStore); they have no typings of their own. */
interface Counts {
  incr(key: string, done: Done, timeWindow: number, max: number): void;
  read(key: string, done: Done, timeWindow: number, max: number): void;
  child(params: object): Counts;
}
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache: number) => Counts;
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: SharedRedis['client'],
  prefix: string,
) => Counts;
const WINDOW_MS = 60_000;

/**
 * The plugin's RedisStore, failing open: while Redis is away (or a command fails or times out)
 * every count is 0, so the request is served; `away` hears each failure (SharedRedis logs once
 * per outage). Nothing waits for a connection: ioredis's offline queue is off.
 */
class FailOpenCounts implements Counts {
  constructor(
    private readonly inner: Counts,
    private readonly redis: SharedRedis,
    private readonly away: (error?: Error) => void,
  ) {}
  incr(key: string, done: Done, timeWindow: number, max: number): void {
    this.call('incr', key, done, timeWindow, max);
  }
  read(key: string, done: Done, timeWindow: number, max: number): void {
    this.call('read', key, done, timeWindow, max);
  }
  child(params: object): Counts {
    return new FailOpenCounts(this.inner.child(params), this.redis, this.away);
  }
  private call(method: 'incr' | 'read', key: string, done: Done, timeWindow: number, max: number) {
    if (!this.redis.ready) {
      this.away();
      return done(null, { current: 0, ttl: timeWindow });
    }
    this.inner[method](
      key,
      (error, count) => {
        if (!error) return done(null, count);
        this.away(error);
        done(null, { current: 0, ttl: timeWindow });
      },
      timeWindow,
      max,
    );
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The global limit of a contract operation, as one step of its pipeline (server/apis/area.ts):
     * the same buckets as the plugin's hook, synchronous in memory (no promise), a promise with Redis.
     */
    limitOperation(request: FastifyRequest, reply: FastifyReply): void | Promise<void>;
  }
}

export default fp(
  async function rateLimits(app: FastifyInstance) {
    decorateDeadCredentials(app); // the verifiers of every API mark dead credentials on the request
    decorateCredentialDigest(app); // and remember the credential's digest for the bucket key
    const { rateLimitPerMinute, rateLimitIpPerMinute, authFailuresPerIp } = app.config;
    const redis = app.platform.redis;
    const { credentialKey, rateLimitKey } = credentialKeys(app.platform.credentialDigest);
    // One store for the plugin's hook (pages, routes outside the contract) and the operations'
    // pipelines, so a client's pages and calls fill one bucket. In memory, LRU entries: enough
    // that a flood of new keys does not evict live buckets quickly.
    const counts: Counts = redis
      ? new FailOpenCounts(new RedisStore(false, false, redis.client, 'rl:'), redis, (error) => commandFailed(error))
      : new LocalStore(false, false, 50_000);
    // A command that fails while the connection is up (a timeout): logged at most once a minute.
    let failureLoggedAt = 0;
    function commandFailed(error?: Error) {
      if (!redis?.ready || Date.now() - failureLoggedAt < 60_000) return;
      failureLoggedAt = Date.now();
      app.log.warn({ err: error }, 'a Redis command failed: requests are served without counting them (fail open)');
    }
    if (redis) {
      redis.onChange((up, error) => {
        if (up) app.log.info('Redis is reachable: rate limits and failure counters are shared by the fleet again');
        else
          app.log.warn(
            { err: error },
            'Redis is not reachable: rate limits and failure counters fail open (requests are served without them) until it is back',
          );
      });
      app.addHook('onReady', async () => {
        if (!(await redis.start())) app.log.warn('Redis was not reachable at start: limits fail open until it is');
      });
    } else if (app.config.databaseUrl) {
      app.log.warn(
        'Rate limits and failure counters are per instance (no REDIS_URL): with N instances a client gets N times each limit; set REDIS_URL to share them (docs/deploy.md)',
      );
    }
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
    const answer = (request: FastifyRequest, reply: FastifyReply, key: string, max: number, count: { current: number; ttl: number }) => {
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
    };
    app.decorate(
      'limitOperation',
      redis
        ? (request: FastifyRequest, reply: FastifyReply) => {
            const key = rateLimitKey(request);
            const max = maxFor(key);
            return new Promise<void>((resolve, reject) =>
              counts.incr(
                key,
                (_error, c) => {
                  try {
                    resolve(answer(request, reply, key, max, c));
                  } catch (problem) {
                    reject(problem);
                  }
                },
                WINDOW_MS,
                max,
              ),
            );
          }
        : (request: FastifyRequest, reply: FastifyReply) => {
            // The in-memory store answers synchronously: no promise on the common path.
            const key = rateLimitKey(request);
            const max = maxFor(key);
            let count = { current: 0, ttl: 0 };
            counts.incr(key, (_error, c) => (count = c), WINDOW_MS, max);
            answer(request, reply, key, max, count);
          },
    );
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
    const presentedKey = (r: FastifyRequest) => credentialKey(r, presentedCredential(r) ?? '');
    const workspaceOf = (r: FastifyRequest) => deadCredentialWorkspace(r) ?? deadSeen.get(presentedKey(r));
    const perCredential = app.createRateLimit({ ...window, max: authFailuresPerIp, keyGenerator: (r) => `dead-credential:${presentedKey(r)}` });
    const perWorkspace = app.createRateLimit({
      ...window,
      max: authFailuresPerIp * DEAD_FAILURES_PER_WORKSPACE_FACTOR,
      keyGenerator: (r) => `dead-workspace:${workspaceOf(r)}`,
    });
    // In memory, no request can be over a count unless this instance recorded a failure within
    // one window: until then, requests skip the lookup. With Redis another instance may have
    // recorded it, so every request that presents a credential reads its counts (pipelined).
    let lastFailure = redis ? Infinity : -Infinity;
    let lastDeadFailure = redis ? Infinity : -Infinity;
    onAuthFailure(app.platform, async (request, deadIn) => {
      if (deadIn === undefined) {
        if (!redis) lastFailure = Date.now();
        await perIp(request);
        return undefined;
      }
      if (!redis) lastDeadFailure = Date.now();
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
      if (redis) {
        // The IP's count: another instance may have recorded the failures, and a valid key from
        // a locked-out IP would pass the lookup. A dead credential needs no read here: its lookup
        // finds it dead and the recorder answers 429 from the shared count (below), so it is read
        // ahead only when this instance knows it (to spare that lookup).
        const ip = await perIp(request, { increment: false });
        if (full(ip)) throw refused(request, ip.ttl, 'IP');
        if (!deadSeen.has(presentedKey(request))) return;
        for (const count of await Promise.all([perCredential(request, { increment: false }), perWorkspace(request, { increment: false })])) {
          if (full(count)) throw refused(request, count.ttl, 'dead credential');
        }
        return;
      }
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
    // A callback hook: the usual request (no recent failure, in memory) passes without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      const now = Date.now();
      if (
        (!redis && now - lastFailure >= AUTH_FAILURE_WINDOW_MS && now - lastDeadFailure >= AUTH_FAILURE_WINDOW_MS) ||
        presentedCredential(request) === undefined
      )
        return done();
      refuseFailing(request).then(() => done(), done);
    });
  },
  { name: 'rate-limits', dependencies: ['problems'] },
);
