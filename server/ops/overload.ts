// Graceful overload: a server asked for more than it can do refuses the excess at once, with
// 503 problem+json and Retry-After, rather than queueing everything until every client times out.
// The guard counts requests in flight (admitted and not yet answered) and refuses a new one in
// onRequest, before its body is read and before authentication or any query, once the count
// reaches its limit (OVERLOAD_MAX_IN_FLIGHT at most, lower while the admitted requests take
// longer than OVERLOAD_TARGET_MS on average), and refuses a share of bulk requests while the event
// loop lags (below). The provider webhook and Login verification (what a person is
// waiting for right now, and what the provider retries late or gives up on) have a reserve of
// their own above that limit, so bulk API traffic cannot starve them. /healthz and /readyz are
// never refused here: their answer is the point of asking.
import type { ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Operation } from '../contract.js';
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
/**
 * Long-lived answers (an event stream stays open for minutes) are not requests in flight: they
 * are capped per credential by the stream limits (docs/security.md, K), and counting them would
 * let a page of open streams refuse every other request.
 */
const STREAMS = new Set(['streamLoginSessionEvents']);

export interface OverloadLimits {
  /** Requests in flight beyond which bulk traffic is always refused: the ceiling of the adaptive limit. */
  maxInFlight: number;
  /** Extra room for the priority operations above the current limit. */
  priorityReserve: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
  /** The mean time in the server the admitted requests should stay under (ms); 0: the limit stays at maxInFlight. */
  targetMs: number;
  /** The event loop's mean delay beyond which a share of bulk requests is refused (ms); 0: off. */
  maxLagMs: number;
}

/** How often the limit adapts: each window of this length, closed by the next request or answer (ms). */
const WINDOW_MS = 100;
const MIN_LIMIT = 4;

/**
 * Two signals, each adapted by additive increase and multiplicative decrease (as TCP's congestion
 * window and Netflix's concurrency limiters do), so that under normal load nothing is refused:
 * - requests queueing inside the server: when the admitted requests of the last window took longer
 *   than targetMs on average, the in-flight limit shrinks by a tenth; when they were fast and the
 *   limit was reached, it grows back, up to maxInFlight;
 * - requests queueing before the server reads them (the CPU saturated, so a request waits in the
 *   socket until the event loop gets to it, which no in-flight count sees): when the event loop's
 *   mean delay over the window exceeds maxLagMs (OVERLOAD_MAX_LAG_MS, off by default: the
 *   embedded store blocks the loop for its queries, so the signal is only sound on PostgreSQL),
 *   a share of bulk requests is refused
 *   (10 % more each window, up to 95 %), and the share falls again by 5 % a window once it is
 *   back under. A refusal costs a small part of a request, so the loop catches up.
 * Priority operations are never dropped by share; they have their reserve above the limit.
 */
export function installOverloadGuard(
  app: FastifyInstance,
  limits: OverloadLimits,
  onRefused: () => void = () => {},
): { inFlight(): number; limit(): number; dropShare(): number } {
  let inFlight = 0;
  let limit = limits.maxInFlight;
  let dropShare = 0;
  const floor = Math.min(MIN_LIMIT, limits.maxInFlight);
  const lag = limits.maxLagMs > 0 ? monitorEventLoopDelay({ resolution: 10 }) : undefined;
  if (lag) {
    lag.enable();
    app.addHook('onClose', async () => lag.disable());
  }
  let windowStart = performance.now();
  let windowSum = 0;
  let windowCount = 0;
  let windowPeak = 0;
  const retryAfter = String(limits.retryAfterSeconds);
  const tick = (now: number) => {
    if (now - windowStart < WINDOW_MS) return;
    if (limits.targetMs > 0 && windowCount && windowSum / windowCount > limits.targetMs) limit = Math.max(floor, Math.floor(limit * 0.9));
    else if (windowPeak >= limit - 1) limit = Math.min(limits.maxInFlight, limit + Math.max(1, Math.ceil(limit * 0.05)));
    if (lag) {
      // The histogram's mean includes its own 10 ms resolution.
      const lagMs = Number.isFinite(lag.mean) ? lag.mean / 1e6 - 10 : 0;
      dropShare = lagMs > limits.maxLagMs ? Math.min(0.95, dropShare + 0.1) : Math.max(0, dropShare - 0.05);
      lag.reset();
    }
    windowStart = now;
    windowSum = 0;
    windowCount = 0;
    windowPeak = inFlight;
  };
  const answered = (started: number) => {
    inFlight--;
    const now = performance.now();
    windowSum += now - started;
    windowCount++;
    tick(now);
  };
  // One listener for every response (no closure per request): the start time rides on the response.
  function closed(this: ServerResponse & { [STARTED]?: number }) {
    answered(this[STARTED]!);
  }
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const route = request.routeOptions; // a getter that builds an object: read once
    const url = route.url;
    if (url !== undefined && EXEMPT.has(url)) return done();
    const started = performance.now();
    tick(started);
    const operation = (route.config as { operation?: Operation }).operation;
    if (operation !== undefined && STREAMS.has(operation.operationId)) return done();
    const priority = operation !== undefined && PRIORITY_OPERATIONS.has(operation.operationId);
    const allowed = priority ? limit + limits.priorityReserve : limit;
    if (inFlight >= allowed || (!priority && dropShare > 0 && Math.random() < dropShare)) {
      onRefused();
      request.log.debug({ inFlight, limit: allowed, dropShare }, 'overloaded: request refused'); // counted in the metrics
      // The connection is kept: the client retries on it after Retry-After.
      sendProblem(reply, problem(503, 'unavailable', 'The server is overloaded; retry after the time in Retry-After.'), {
        ...BASELINE_HEADERS,
        'retry-after': retryAfter,
      });
      return;
    }
    inFlight++;
    if (inFlight > windowPeak) windowPeak = inFlight;
    // 'close' comes once per response, answered or aborted by the client.
    const raw: ServerResponse & { [STARTED]?: number } = reply.raw;
    raw[STARTED] = started;
    raw.on('close', closed);
    done();
  });
  return { inFlight: () => inFlight, limit: () => limit, dropShare: () => dropShare };
}
