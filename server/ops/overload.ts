// Graceful overload: a server asked for more than it can do refuses the excess at once, with
// 503 problem+json and Retry-After, rather than queueing everything until every client times out.
// The guard counts requests in flight (admitted and not yet answered) and refuses a new one in
// onRequest, before its body is read and before authentication or any query, once the count
// reaches its limit: OVERLOAD_MAX_IN_FLIGHT at most, lower while the admitted requests take
// longer than OVERLOAD_TARGET_MS on average (below). The provider webhook and Login verification (what a person is
// waiting for right now, and what the provider retries late or gives up on) have a reserve of
// their own above that limit, so bulk API traffic cannot starve them. /healthz and /readyz are
// never refused here: their answer is the point of asking.
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

export interface OverloadLimits {
  /** Requests in flight beyond which bulk traffic is always refused: the ceiling of the adaptive limit. */
  maxInFlight: number;
  /** Extra room for the priority operations above the current limit. */
  priorityReserve: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
  /** The mean time in the server the admitted requests should stay under (ms). */
  targetMs: number;
}

/** How often the limit adapts: each window of answered requests (ms). */
const WINDOW_MS = 100;
const MIN_LIMIT = 4;

/**
 * The limit adapts (additive increase, multiplicative decrease, as TCP's congestion window and
 * Netflix's concurrency limiters do): when the admitted requests of the last window took longer
 * than targetMs on average, requests are queueing inside the server, so the limit shrinks by a
 * tenth; when they were fast and the limit was reached, it grows. Under normal load it sits at
 * maxInFlight and nothing is refused. No timer: the window closes on the next answer.
 */
export function installOverloadGuard(app: FastifyInstance, limits: OverloadLimits, onRefused: () => void = () => {}): { inFlight(): number; limit(): number } {
  let inFlight = 0;
  let limit = limits.maxInFlight;
  const floor = Math.min(MIN_LIMIT, limits.maxInFlight);
  let windowStart = performance.now();
  let windowSum = 0;
  let windowCount = 0;
  let windowPeak = 0;
  const retryAfter = String(limits.retryAfterSeconds);
  const answered = (started: number) => {
    inFlight--;
    const now = performance.now();
    windowSum += now - started;
    windowCount++;
    if (now - windowStart < WINDOW_MS) return;
    const mean = windowSum / windowCount;
    if (mean > limits.targetMs) limit = Math.max(floor, Math.floor(limit * 0.9));
    else if (windowPeak >= limit - 1) limit = Math.min(limits.maxInFlight, limit + Math.max(1, Math.ceil(limit * 0.05)));
    windowStart = now;
    windowSum = 0;
    windowCount = 0;
    windowPeak = inFlight;
  };
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const url = request.routeOptions.url;
    if (url !== undefined && EXEMPT.has(url)) return done();
    const operation = (request.routeOptions.config as { operation?: Operation }).operation;
    const allowed = operation && PRIORITY_OPERATIONS.has(operation.operationId) ? limit + limits.priorityReserve : limit;
    if (inFlight >= allowed) {
      onRefused();
      request.log.debug({ inFlight, limit: allowed }, 'overloaded: request refused'); // counted in the metrics
      // The connection is kept: the client retries on it after Retry-After.
      sendProblem(reply, problem(503, 'unavailable', 'The server is overloaded; retry after the time in Retry-After.'), {
        ...BASELINE_HEADERS,
        'retry-after': retryAfter,
      });
      return;
    }
    inFlight++;
    if (inFlight > windowPeak) windowPeak = inFlight;
    const started = performance.now();
    // 'close' comes once per response, answered or aborted by the client.
    reply.raw.once('close', () => answered(started));
    done();
  });
  return { inFlight: () => inFlight, limit: () => limit };
}
