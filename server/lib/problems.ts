// RFC 9457 problem details, typed from the contract's catalogue (spec/common/errors.tsp).
import type { FastifyReply } from 'fastify';
import type { components } from '#generated/account/types.js';

export type ProblemDetails = components['schemas']['ProblemDetails'];
export type ProblemTypeUri = components['schemas']['ProblemType'];

const BASE = 'https://chatapp.example/problems/';
/** The short name of a catalogue entry: `not-found` for `https://chatapp.example/problems/not-found`. */
export type ProblemName = ProblemTypeUri extends `${typeof BASE}${infer Name}` ? Name : never;

const TITLES: Record<ProblemName, string> = {
  validation: 'Invalid request',
  'malformed-body': 'Malformed request body',
  unauthorized: 'Unauthorized',
  'invalid-signature': 'Invalid signature',
  'plan-limit': 'Plan limit reached',
  forbidden: 'Forbidden',
  'signup-closed': 'Sign-up closed',
  'invite-required': 'Invite required',
  'not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  'not-acceptable': 'Not acceptable',
  conflict: 'Conflict',
  expired: 'Expired',
  'payload-too-large': 'Payload too large',
  'unsupported-media-type': 'Unsupported media type',
  'unsafe-url': 'Unsafe URL',
  'outside-window': 'Outside the customer-service window',
  'opted-out': 'The contact opted out',
  unprocessable: 'Unprocessable request',
  'rate-limited': 'Too many requests',
  'headers-too-large': 'Request headers too large',
  internal: 'Internal error',
  'not-implemented': 'Not implemented',
  'provider-error': 'Chat provider error',
  unavailable: 'Service unavailable',
  'insufficient-storage': 'Insufficient storage',
};

/** An error that the error handler turns into a problem response. */
export class HttpProblem extends Error {
  readonly problem: ProblemDetails;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    name: ProblemName,
    detail?: string,
    extra: Partial<ProblemDetails> = {},
    headers: Record<string, string> = {},
  ) {
    super(detail ?? TITLES[name]);
    this.problem = { type: `${BASE}${name}` as ProblemTypeUri, title: TITLES[name], status, ...(detail ? { detail } : {}), ...extra };
    this.headers = headers;
  }
}

export function problem(status: number, name: ProblemName, detail?: string, extra: Partial<ProblemDetails> = {}): ProblemDetails {
  return new HttpProblem(status, name, detail, extra).problem;
}

/** Sends a problem response with the request's path and id filled in. */
export function sendProblem(reply: FastifyReply, body: ProblemDetails, headers: Record<string, string> = {}): FastifyReply {
  const request = reply.request;
  return reply
    .code(body.status)
    .headers(headers)
    .type('application/problem+json')
    .send({ ...body, instance: request.url.split('?')[0], request_id: String(request.id) });
}
