// Graceful overload: a server asked for more than it can do refuses the excess at once, with
// 503 problem+json and Retry-After, rather than queueing everything until every client times out.
// The guard counts requests in flight (admitted and not yet answered) and refuses a new one in
// onRequest, before its body is read and before authentication or any query, once the count
// reaches its limit. The limit is OVERLOAD_MAX_IN_FLIGHT while the server keeps up; while its
// event loop is saturated it is derived from the capacity measured meanwhile (below), so that the
// admitted requests wait about OVERLOAD_QUEUE_MS, not seconds. The provider webhook and Login
// verification (what a person is waiting for right now, and what the provider retries late or
// gives up on) have a reserve of their own above that limit, so bulk API traffic cannot starve
// them. /healthz and /readyz are never refused here: their answer is the point of asking.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { contractOperations, type Operation } from '../contract.js';
import { problem, sendProblem } from '../lib/problems.js';
import { BASELINE_HEADERS } from '../plugins/security-headers.js';

/** Operations with priority: the provider's webhook and the steps of a Login verification. */
export const PRIORITY_OPERATIONS = new Set([
  'receiveProviderWebhook',
  'verifyProviderWebhook',
  'receiveHostedLoginWebhook',
  'startLoginSession',
  'getLoginSessionStatus',
  'streamLoginSessionEvents',
  'checkLoginCode',
  'resendLoginCode',
  'verifyToken',
  'getLoginJwks',
]);

const EXEMPT = new Set(['/healthz', '/readyz']);
const STARTED = Symbol('overload.started');
/** On a response: the request was bulk traffic (counted in `bulkInFlight` too). */
const BULK = Symbol('overload.bulk');
/**
 * Long-lived answers (an event stream stays open for minutes) are not requests in flight: they
 * are capped per credential by the stream limits (docs/security.md, K), and counting them would
 * let a page of open streams refuse every other request.
 */
const STREAMS = new Set(['streamLoginSessionEvents']);

/** The guard's state now, for the metrics (server/ops/metrics.ts) and tests. */
export interface OverloadState {
  inFlight(): number;
  limit(): number;
  /** Admitted answers per second measured while saturated; 0 until then. */
  capacity(): number;
  dropShare(): number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present when the overload guard is on. */
    overload?: OverloadState;
  }
}

type Kind = 'exempt' | 'stream' | 'priority' | 'bulk';
/** Why a request was refused: it waited too long in a saturated turn, the in-flight limit, or the lag share. */
export type RefusalReason = 'late' | 'in_flight' | 'lag';

/**
 * The kind of a request from its method and path, before Fastify routes it: the probes, the
 * priority operations (their paths from the contract) and their event stream; bulk otherwise.
 */
function requestKinds(): (method: string, url: string) => Kind {
  const routes = contractOperations()
    .filter((operation) => PRIORITY_OPERATIONS.has(operation.operationId))
    .map((operation) => ({
      method: operation.method.toUpperCase(),
      path: new RegExp(`^${operation.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}/?$`),
      kind: STREAMS.has(operation.operationId) ? ('stream' as const) : ('priority' as const),
    }));
  return (method, url) => {
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (EXEMPT.has(path)) return 'exempt';
    for (const route of routes) if (route.method === method && route.path.test(path)) return route.kind;
    return 'bulk';
  };
}

export interface OverloadLimits {
  /** Requests in flight beyond which bulk traffic is always refused: the ceiling of the adaptive limit. */
  maxInFlight: number;
  /** Extra room for the priority operations above the current limit. */
  priorityReserve: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
  /**
   * While the event loop is saturated: how long the admitted requests may queue (ms). The limit is
   * then the throughput measured meanwhile × this (Little's law); 0: off.
   */
  queueMs: number;
  /** The mean time in the server the admitted requests should stay under (ms); 0: not used. */
  targetMs: number;
  /** The event loop's mean delay beyond which a share of bulk requests is refused (ms); 0: off. */
  maxLagMs: number;
}

/** How often the limit adapts: each window of this length, closed by the next request or answer (ms). */
const WINDOW_MS = 100;
/**
 * Never fewer in flight, and no request of a turn refused as late before this many: a handful of
 * concurrent clients (a benchmark's 10 connections, a proxy's pool) is not an overload, even on a
 * saturated machine.
 */
const MIN_LIMIT = 16;
/** From which request of an event-loop turn on its wait counts (see `waited`). */
const QUEUED = MIN_LIMIT;
/** The share of a window the event loop spent working beyond which the server is saturated. */
const SATURATED = 0.9;

/**
 * Three signals adapt the limit each window, so that under normal load nothing is refused:
 * - the event loop saturated (busy more than 90 % of the window, as @fastify/under-pressure's
 *   maxEventLoopUtilization sees it): the CPU is the bottleneck and whatever is admitted beyond
 *   what it gets through queues. The answers per second of the saturated windows (a moving
 *   average) are the capacity, and the limit becomes capacity × queueMs: enough requests in
 *   flight to keep the CPU busy, few enough that an admitted one waits about queueMs. Once the
 *   loop has room again the limit grows by a quarter a window, up to maxInFlight. A refusal
 *   costs a small part of a request, so the admitted ones keep most of the CPU;
 * - optionally (targetMs), requests queueing inside the server for something else than the CPU:
 *   when the admitted requests of the last window took longer than targetMs on average, the
 *   limit shrinks by a tenth (additive increase, multiplicative decrease, as TCP's congestion
 *   window). Off by default: the mean also takes in exports and slow reports;
 * - optionally (maxLagMs), requests queueing before the server reads them: when the event loop's
 *   mean delay over the window exceeds maxLagMs, a share of bulk requests is refused (10 % more
 *   each window, up to 95 %), falling again by 5 % a window once it is back under.
 * Priority operations are never dropped by share; they have their reserve above the limit.
 */
export function installOverloadGuard(app: FastifyInstance, limits: OverloadLimits, onRefused: (reason: RefusalReason) => void = () => {}): OverloadState {
  let inFlight = 0;
  /**
   * The bulk requests among them: the limit bounds these. Priority requests in flight (a
   * provider's burst of status webhooks) take from their own reserve, not from the bulk room, so
   * that a client sending one request at a time is not refused while the server answers a burst.
   */
  let bulkInFlight = 0;
  let limit = limits.maxInFlight;
  let dropShare = 0;
  /** Answers per second while saturated (moving average); 0 until a saturated window is seen. */
  let capacity = 0;
  const floor = Math.min(MIN_LIMIT, limits.maxInFlight);
  const lag = limits.maxLagMs > 0 ? monitorEventLoopDelay({ resolution: 10 }) : undefined;
  if (lag) {
    lag.enable();
    app.addHook('onClose', async () => lag.disable());
  }
  let windowStart = performance.now();
  let windowElu = performance.eventLoopUtilization();
  let windowSum = 0;
  let windowCount = 0;
  let windowPeak = 0;
  const retryAfter = String(limits.retryAfterSeconds);
  /** Whether the event loop was saturated in the last closed window. */
  let saturated = false;
  /** When this turn of the event loop handled its first request (see `waited` below). */
  let turnStart = 0;
  let turnRequests = 0;
  let inTurn = false;
  const endTurn = () => {
    inTurn = false;
  };
  /**
   * How long the requests of this event-loop turn have waited for the server at least. Each turn
   * takes every request that arrived during the previous one and starts them one after the other;
   * on a saturated server (and always on the embedded store, whose queries run on the event loop)
   * a request may run to its answer before the next one is read, so queueing happens in front of
   * the server, where no in-flight count sees it. A request read `queueMs` after the first one of
   * its turn has waited that long already. A few requests behind a slow one are not a queue,
   * though: only from the QUEUED-th request of a turn on does its wait count.
   */
  const waited = (now: number) => {
    if (!inTurn) {
      inTurn = true;
      turnStart = now;
      turnRequests = 0;
      setImmediate(endTurn);
    }
    return ++turnRequests < QUEUED ? 0 : now - turnStart;
  };
  const tick = (now: number) => {
    const span = now - windowStart;
    if (span < WINDOW_MS) return;
    const elu = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(elu, windowElu).utilization;
    windowElu = elu;
    saturated = busy >= SATURATED;
    if (limits.queueMs > 0 && saturated && windowCount > 0) {
      const rate = (windowCount * 1000) / span;
      // Up fast, down slowly: a window whose CPU went mostly to refusals must not drag the limit
      // down into fewer admitted requests, hence more refusals.
      capacity = rate >= capacity ? 0.5 * capacity + 0.5 * rate : 0.9 * capacity + 0.1 * rate;
      limit = Math.min(limits.maxInFlight, Math.max(floor, Math.ceil((capacity * limits.queueMs) / 1000)));
    } else if (limits.targetMs > 0 && windowCount && windowSum / windowCount > limits.targetMs) {
      limit = Math.max(floor, Math.floor(limit * 0.9));
    } else if (limit < limits.maxInFlight && (!saturated || windowPeak >= limit - 1)) {
      limit = Math.min(limits.maxInFlight, limit + Math.max(1, Math.ceil(limit * 0.25)));
    }
    if (lag) {
      // The histogram's mean includes its own 10 ms resolution.
      const lagMs = Number.isFinite(lag.mean) ? lag.mean / 1e6 - 10 : 0;
      dropShare = lagMs > limits.maxLagMs ? Math.min(0.95, dropShare + 0.1) : Math.max(0, dropShare - 0.05);
      lag.reset();
    }
    windowStart = now;
    windowSum = 0;
    windowCount = 0;
    windowPeak = bulkInFlight;
  };
  const answered = (started: number) => {
    inFlight--;
    const now = performance.now();
    windowSum += now - started;
    windowCount++;
    tick(now);
  };
  const detail = 'The server is overloaded; retry after the time in Retry-After.';
  /**
   * Why a request of this kind is refused now, if it is (and then it is not counted in flight).
   * `network`: it came from a client, through the server's listener. In-process requests
   * (`app.inject`: seeding, tests, internal calls) are not the load a guard sheds; they meet the
   * fixed ceiling only, never the adaptive limit or the lag share, so a burst of them while the
   * loop is saturated (a seeding run) is not refused at the capacity of the saturated windows.
   */
  const refuse = (kind: Kind, now: number, turns: boolean, network = true): RefusalReason | undefined => {
    if (kind === 'exempt') return undefined;
    const priority = kind !== 'bulk';
    // A saturated turn: priority requests may wait four times as long as the others.
    if (turns && saturated && limits.queueMs > 0 && waited(now) > (priority ? 4 * limits.queueMs : limits.queueMs)) return 'late';
    if (kind === 'stream') return undefined;
    const bound = network ? limit : limits.maxInFlight;
    if (priority ? inFlight >= bound + limits.priorityReserve : bulkInFlight >= bound) return 'in_flight';
    return network && !priority && dropShare > 0 && Math.random() < dropShare ? 'lag' : undefined;
  };
  const admitted = new WeakSet<IncomingMessage>();

  // Refusals before Fastify sees the request: no request object, no routing, no hooks, no log
  // line, just the answer, so that refusing costs a small part of what serving costs and the
  // admitted requests keep the CPU. The request's kind comes from its method and path.
  const kindOf = requestKinds();
  // The refusal's problem+json up to its instance (the same members, in the same order, as
  // sendProblem's), and its fixed headers.
  const refusalHead = `${JSON.stringify(problem(503, 'unavailable', detail)).slice(0, -1)},"instance":`;
  const refusalHeaders = [...Object.entries(BASELINE_HEADERS).flat(), 'content-type', 'application/problem+json; charset=utf-8', 'retry-after', retryAfter];
  const queueing = limits.queueMs > 0;
  const server = app.server;
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  /** Whether every client request passes the listener below (then any other one is in-process). */
  const listening = handlers.length === 1;
  if (listening) {
    const fastify = handlers[0]!;
    server.removeListener('request', fastify);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      // Nothing to decide (and no path to match) while no signal says overload: the usual case. A
      // saturated loop is a signal only with queueMs set; without it, under full load (a busy
      // machine, a benchmark) every request would match its path only for `refuse` to pass it.
      const reason =
        (saturated && queueing) || inFlight >= limit || dropShare > 0
          ? refuse(kindOf(req.method ?? 'GET', req.url ?? '/'), performance.now(), true)
          : undefined;
      if (reason) {
        onRefused(reason);
        const id = randomUUID();
        const json = `${refusalHead}${JSON.stringify((req.url ?? '/').split('?')[0])},"request_id":"${id}"}`;
        // The connection is kept: the client retries on it after Retry-After. The headers as one
        // flat list, the body from a prefix made once: a refusal should cost next to nothing.
        res.writeHead(503, [...refusalHeaders, 'content-length', String(Buffer.byteLength(json)), 'x-request-id', id]);
        res.end(json);
        return;
      }
      admitted.add(req);
      fastify.call(server, req, res);
    });
  }

  // Counting, and the decision for requests that did not come through the listener above: when it
  // is installed, in-process ones (inject), which meet the fixed ceiling only; otherwise every
  // request, which then arrive in no turn of the event loop: the in-flight limit only.
  // One listener for every response (no closure per request): the start time rides on the response.
  function closed(this: ServerResponse & { [STARTED]?: number; [BULK]?: boolean }) {
    if (this[BULK]) bulkInFlight--;
    answered(this[STARTED]!);
  }
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const route = request.routeOptions; // a getter that builds an object: read once
    const url = route.url;
    if (url !== undefined && EXEMPT.has(url)) return done();
    const started = performance.now();
    tick(started);
    const operation = (route.config as { operation?: Operation }).operation;
    const kind: Kind =
      operation === undefined ? 'bulk' : STREAMS.has(operation.operationId) ? 'stream' : PRIORITY_OPERATIONS.has(operation.operationId) ? 'priority' : 'bulk';
    const reason = admitted.has(request.raw) ? undefined : refuse(kind, started, false, !listening);
    if (reason) {
      onRefused(reason);
      request.log.debug({ inFlight, limit, reason }, 'overloaded: request refused'); // counted in the metrics
      sendProblem(reply, problem(503, 'unavailable', detail), { ...BASELINE_HEADERS, 'retry-after': retryAfter });
      return;
    }
    if (kind === 'stream') return done();
    inFlight++;
    const raw: ServerResponse & { [STARTED]?: number; [BULK]?: boolean } = reply.raw;
    if (kind === 'bulk') {
      bulkInFlight++;
      raw[BULK] = true;
      if (bulkInFlight > windowPeak) windowPeak = bulkInFlight;
    }
    // 'close' comes once per response, answered or aborted by the client.
    raw[STARTED] = started;
    raw.on('close', closed);
    done();
  });
  const state: OverloadState = { inFlight: () => inFlight, limit: () => limit, capacity: () => capacity, dropShare: () => dropShare };
  app.decorate('overload', state);
  return state;
}
