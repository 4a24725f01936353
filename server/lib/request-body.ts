// The request body against the contract, before any parser or handler sees it. Fastify validates
// a body only when its Content-Type has a schema (body schemas are keyed by media type), so a
// body sent as text/plain, or none at all, used to reach handlers unvalidated (500s that
// schemathesis found, bad-inputs H12). Added to every contract route (onRoute):
// - a declared body with another media type, or a malformed multipart type: 415;
// - a required body missing (after parsing): 400 `validation` pointing at /body;
// - an operation without a body given a non-JSON one, or announcing multipart: 415 (a JSON
//   body, which many clients send on bare POSTs, is still accepted and ignored).
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { problem, sendProblem } from './problems.js';

const mediaType = (request: FastifyRequest) =>
  String(request.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
const hasBody = (request: FastifyRequest) => Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;

function unsupported(reply: FastifyReply, type: string, accepted: string[]) {
  const detail = accepted.length
    ? `This operation accepts ${accepted.join(' or ')}, not ${type || 'a body without Content-Type'}.`
    : `This operation takes no body (got ${type}).`;
  return sendProblem(reply, problem(415, 'unsupported-media-type', detail));
}

/**
 * The media-type guard for one route: a callback hook, as almost every request passes it (a GET
 * without Content-Type is decided by one header lookup).
 */
function guard(accepted: string[]) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const headers = request.headers;
    if (headers['content-type'] === undefined && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) return done();
    const type = mediaType(request);
    if (!accepted.length) {
      const sent = hasBody(request);
      // multipart is parsed whenever its type is announced, body or not: refuse it before that.
      if (type && type !== 'application/json' && (sent || type.startsWith('multipart/'))) return unsupported(reply, type, []);
      return done();
    }
    if (type || hasBody(request)) {
      if (!accepted.includes(type)) return unsupported(reply, type, accepted);
      if (type.startsWith('multipart/') && !/;\s*boundary=/i.test(String(request.headers['content-type']))) {
        return sendProblem(reply, problem(400, 'malformed-body', 'multipart/form-data needs a boundary parameter.'));
      }
    }
    done();
  };
}

// A missing required body is only known once the parsers ran: a streamed body announces no
// length, and an empty JSON body is the JSON parser's to refuse (400 malformed-body).
function requireBody(request: FastifyRequest, reply: FastifyReply, done: () => void) {
  if (request.body === undefined && !mediaType(request).startsWith('multipart/')) {
    return sendProblem(reply, problem(400, 'validation', 'The request body is required.', { errors: [{ pointer: '/body', detail: 'is required' }] } as never));
  }
  done();
}

/**
 * Adds the guard to every contract route (those carry their operation). Call it after the
 * rate-limit plugin: the guard then runs after the operation's authentication and rate limit.
 */
export function guardRequestBodies(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const operation = route.config?.operation;
    if (!operation) return;
    route.onRequest = [...[route.onRequest ?? []].flat(), guard(operation.bodyTypes) as never];
    if (operation.bodyRequired) route.preValidation = [requireBody as never, ...[route.preValidation ?? []].flat()];
  });
}
