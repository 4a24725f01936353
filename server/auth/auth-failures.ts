// Failed credential authentications (bad-inputs K3, K10-K12). The per-credential rate limit gives
// every invented key a fresh bucket, so guessing is bounded here instead. A 401 of an
// authenticator for a request that presented a credential counts against one of two things:
//
// - A credential nobody knows (a guess, a typo, garbage) counts against the client IP: once an IP
//   has AUTH_FAILURES_PER_IP of them in AUTH_FAILURE_WINDOW_MS, every further request of it that
//   presents a credential is refused with 429 before any lookup (server/plugins/rate-limits.ts),
//   even a valid one: a guesser holding one real key could otherwise keep guessing with it.
//   A success does not reset the count, for the same reason.
// - A credential we issued that is now dead (revoked, expired or rotated away: a Messaging or
//   Login key (./retired-credentials.ts), a Connect bearer revoked by its owner, by refresh-reuse
//   detection or by code reuse, an expired one, an expired owner JWT) guesses nothing, so it
//   counts against itself and its workspace, never the IP: one tenant's dead token must not lock
//   out the other tenants behind the same address.
//   Past AUTH_FAILURES_PER_IP for the credential, or DEAD_FAILURES_PER_WORKSPACE_FACTOR times it
//   for its workspace, that credential (and the workspace's other dead ones) gets 429 instead.
//
// The verifiers say which credentials they found dead (`markDeadCredential`, by the header they
// read); a failure counts as dead only when every credential header the request carries was
// found dead, so a guess cannot ride beside a dead token to escape the per-IP count.
//
// The counters are buckets of @fastify/rate-limit's in-memory store (LRUs with a bounded number
// of keys), kept per instance like the other limits; this module only connects the
// authenticators, which record, to the limiters the rate-limit plugin creates.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HttpProblem } from '../lib/problems.js';
import type { Platform } from '../platform.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The credential headers a verifier found dead, with the workspace of each (markDeadCredential). */
    deadCredentials: Map<CredentialHeader, string> | null;
  }
}

/** A fixed window opened by the first failure of an IP, a dead credential or a workspace. */
export const AUTH_FAILURE_WINDOW_MS = 10 * 60_000;

/** IPs (and dead credentials, and workspaces) tracked at once; the oldest are forgotten first. */
export const AUTH_FAILURE_IPS = 50_000;

/** A workspace's dead credentials together may fail this many times AUTH_FAILURES_PER_IP. */
export const DEAD_FAILURES_PER_WORKSPACE_FACTOR = 5;

/** The headers a credential is read from. */
export type CredentialHeader = 'authorization' | 'x-api-key';

/**
 * Counts one failure: against the IP when `deadIn` is undefined, else against the credential and
 * its workspace `deadIn`. Answers the 429 to send instead of the 401, if any. Installed per
 * platform by the rate-limit plugin.
 */
export type AuthFailureRecorder = (request: FastifyRequest, deadIn: string | undefined) => Promise<HttpProblem | undefined>;

/** Installs the platform's recorder (the rate-limit plugin does, per platform). */
export function onAuthFailure(platform: Platform, record: AuthFailureRecorder): void {
  platform.authFailureRecorder = record;
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

/** The request decoration the verifiers mark dead credentials in; once per app, before it is ready. */
export function decorateDeadCredentials(app: FastifyInstance): void {
  app.decorateRequest('deadCredentials', null);
}

/** A verifier found the credential in `header` issued by us to `workspaceId` but revoked or expired. */
export function markDeadCredential(request: FastifyRequest, header: CredentialHeader, workspaceId: string): void {
  (request.deadCredentials ??= new Map()).set(header, workspaceId);
}

/** The workspace of the request's dead credential when every credential header it carries was found dead. */
export function deadCredentialWorkspace(request: FastifyRequest): string | undefined {
  const marks = request.deadCredentials;
  if (!marks) return undefined;
  let workspaceId: string | undefined;
  for (const header of ['x-api-key', 'authorization'] as const) {
    if (!request.headers[header]) continue;
    workspaceId ??= marks.get(header);
    if (!marks.has(header)) return undefined;
  }
  return workspaceId;
}

/**
 * Called on an authenticator's 401: counts it when a credential was presented (an absent one
 * guesses nothing). Answers the 429 to throw instead of the 401 when the count says so.
 */
export async function recordAuthFailure(request: FastifyRequest): Promise<HttpProblem | undefined> {
  if (presentedCredential(request) === undefined) return undefined;
  return request.server.platform.authFailureRecorder?.(request, deadCredentialWorkspace(request));
}
