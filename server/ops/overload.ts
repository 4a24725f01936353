// Graceful overload: a server asked for more than it can do refuses the excess at once, with
// 503 problem+json and Retry-After, rather than queueing everything until every client times out.
// The guard counts requests in flight (admitted and not yet answered) and refuses a new one in
// onRequest, before its body is read and before authentication or any query, once the count
// reaches OVERLOAD_MAX_IN_FLIGHT. The provider webhook and Login verification (what a person is
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
  /** Requests in flight beyond which bulk traffic is refused. */
  maxInFlight: number;
  /** Extra room for the priority operations above maxInFlight. */
  priorityReserve: number;
  /** Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
}

export function installOverloadGuard(app: FastifyInstance, limits: OverloadLimits, onRefused: () => void = () => {}): { inFlight(): number } {
  let inFlight = 0;
  const priorityLimit = limits.maxInFlight + limits.priorityReserve;
  const retryAfter = String(limits.retryAfterSeconds);
  const release = () => {
    inFlight--;
  };
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const url = request.routeOptions.url;
    if (url !== undefined && EXEMPT.has(url)) return done();
    const operation = (request.routeOptions.config as { operation?: Operation }).operation;
    const limit = operation && PRIORITY_OPERATIONS.has(operation.operationId) ? priorityLimit : limits.maxInFlight;
    if (inFlight >= limit) {
      onRefused();
      request.log.debug({ inFlight, limit }, 'overloaded: request refused'); // counted in the metrics
      // The connection is kept: the client retries on it after Retry-After.
      sendProblem(reply, problem(503, 'unavailable', 'The server is overloaded; retry after the time in Retry-After.'), {
        ...BASELINE_HEADERS,
        'retry-after': retryAfter,
      });
      return;
    }
    inFlight++;
    // 'close' comes once per response, answered or aborted by the client.
    reply.raw.once('close', release);
    done();
  });
  return { inFlight: () => inFlight };
}
