// Failed credential authentications per client IP (catalogue K3). The per-credential rate limit
// gives every invented key a fresh bucket, so guessing is bounded here instead: each 401 of an
// authenticator for a request that presented a credential counts against its IP, and once an IP
// has AUTH_FAILURES_PER_IP of them in AUTH_FAILURE_WINDOW_MS, every further request of it that
// presents a credential is refused with 429 before any lookup (server/plugins/rate-limits.ts),
// even a valid one: a guesser holding one real key could otherwise keep guessing with it.
// A success does not reset the count, for the same reason.
//
// The counter is a bucket of @fastify/rate-limit's in-memory store (an LRU with a bounded number
// of IPs), kept per instance like the other limits; this module only connects the authenticators,
// which record, to the limiter the rate-limit plugin creates.
import type { FastifyRequest } from 'fastify';

/** A fixed window opened by an IP's first failure. */
export const AUTH_FAILURE_WINDOW_MS = 10 * 60_000;

/** IPs tracked at once (the oldest are forgotten first); one entry is a few dozen bytes. */
export const AUTH_FAILURE_IPS = 50_000;

/** Counts one failure of the request's IP; installed per platform by the rate-limit plugin. */
type Recorder = (request: FastifyRequest) => Promise<unknown>;

const recorders = new WeakMap<object, Recorder>();

export function onAuthFailure(platform: object, record: Recorder): void {
  recorders.set(platform, record);
}

/**
 * The credential a request presents in a header (the ones the authenticators read), without its
 * scheme: `ApiKey k` and `X-API-Key: k` are the same credential. Not verified here.
 */
export function presentedCredential(request: FastifyRequest): string | undefined {
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey) return apiKey;
  const authorization = request.headers.authorization;
  return authorization ? authorization.replace(/^\S+\s+/, '') : undefined;
}

/** Called on an authenticator's 401: counts it when a credential was presented (an absent one guesses nothing). */
export async function recordAuthFailure(request: FastifyRequest): Promise<void> {
  if (presentedCredential(request) === undefined) return;
  await recorders.get(request.server.platform)?.(request);
}
