// RFC 6749 §5.2 errors of the token and revocation endpoints: JSON, never cached, and for a
// failed client authentication a 401 with `WWW-Authenticate: Basic` (§5.2 requires it when the
// client used HTTP Basic, bad-inputs C11; sent for every invalid_client, as the contract declares).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from '#server/lib/problems.js';
import { toProblem } from '#server/plugins/problems.js';
import { errorView, sendConsentPage } from './consent-page.js';
import { registrationErrorHandler, registrationFormat } from './registration.js';
import type { components } from '#generated/connect/types.js';

type OAuthErrorCode = components['schemas']['OAuthErrorCode'];

export const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

export class OAuthFailure extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
  }

  get status(): number {
    return this.error === 'invalid_client' ? 401 : 400;
  }
}

export const invalidRequest = (description: string) => new OAuthFailure('invalid_request', description);
export const invalidGrant = (description = 'The authorization code or refresh token is invalid, expired, revoked or already used.') =>
  new OAuthFailure('invalid_grant', description);

export function sendOAuthError(reply: FastifyReply, failure: OAuthFailure): FastifyReply {
  if (failure.status === 401) reply.header('www-authenticate', 'Basic realm="connect"');
  return reply.code(failure.status).headers(NO_STORE).type('application/json').send({ error: failure.error, error_description: failure.description });
}

/**
 * The route error handler of the token and revocation endpoints: what fails before the handler
 * (a body that does not parse, a parameter of the wrong type, a content type or size refused)
 * still answers in RFC 6749 §5.2's format (bad-inputs C14), `invalid_request` with the refusal's status.
 * Rate limits (429) and server errors stay problem+json, like everywhere else.
 */
export function oauthErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { body, headers } = toProblem(error);
  if (body.status === 429 || body.status >= 500) {
    if (body.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, body, headers);
  }
  return reply
    .code(body.status)
    .headers(NO_STORE)
    .type('application/json')
    .send({ error: 'invalid_request', error_description: body.detail ?? body.title });
}

/**
 * The authorize page's: a query the contract refuses (a parameter repeated or too long) is a browser's
 * request too, so it gets the HTML error page at the same status and never a redirect (bad-inputs C1).
 */
export function authorizePageErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { body, headers } = toProblem(error);
  if (body.status === 429 || body.status >= 500) {
    if (body.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, body, headers);
  }
  const first = body.errors?.[0];
  const what = first ? `${first.pointer.replace(/^\/query\//, '')}: ${first.detail}` : 'each parameter must appear once, within its length';
  return sendConsentPage(reply, body.status, 'Authorization request refused', errorView(`The authorization request is malformed (${what}).`));
}

/**
 * Guards that answer before the route's error handler can (onRequest hooks that send a problem
 * themselves, e.g. the request-body guard's 415) still answer RFC 6749 §5.2's format here (bad-inputs C14).
 */
export async function oauthFormat(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  const status = reply.statusCode;
  if (status < 400 || status === 429 || status >= 500 || typeof payload !== 'string') return payload;
  if (!String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
  const problem = JSON.parse(payload) as { detail?: string; title?: string };
  reply.headers(NO_STORE).type('application/json');
  return JSON.stringify({ error: 'invalid_request', error_description: problem.detail ?? problem.title });
}

/** Route options the registry adds to these operations' routes. */
export const oauthRouteOptions = {
  authorize: { errorHandler: authorizePageErrorHandler },
  createToken: { errorHandler: oauthErrorHandler, onSend: oauthFormat },
  revokeToken: { errorHandler: oauthErrorHandler, onSend: oauthFormat },
  introspectToken: { errorHandler: oauthErrorHandler, onSend: oauthFormat },
  registerClient: { errorHandler: registrationErrorHandler, onSend: registrationFormat },
  updateRegisteredClient: { errorHandler: registrationErrorHandler, onSend: registrationFormat },
};
