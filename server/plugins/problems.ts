// One error handler for the whole server: every 4xx/5xx leaves as application/problem+json
// from the contract's catalogue, with each invalid field listed and no internals.
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance } from 'fastify';
import { prefersHtml, sendNotFoundPage } from '../html/not-found-page.js';
import { HttpProblem, problem, sendProblem, type ProblemDetails } from '../lib/problems.js';
import { MAX_LISTED_ERRORS, invalidParams } from '../lib/validation.js';

const BY_CODE: Record<string, () => ProblemDetails> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => problem(400, 'malformed-body', 'The body is not valid JSON.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => problem(400, 'malformed-body', 'The body is empty but Content-Type says JSON.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => problem(400, 'malformed-body', 'Content-Length does not match the body.'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => problem(413, 'payload-too-large', 'The body is larger than this operation accepts.'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => problem(415, 'unsupported-media-type', 'This operation does not accept that Content-Type.'),
  FST_ERR_CTP_INVALID_TYPE: () => problem(415, 'unsupported-media-type', 'The Content-Type header is malformed.'),
  FST_REQ_FILE_TOO_LARGE: () => problem(413, 'payload-too-large', 'The uploaded file is larger than this operation accepts.'),
  FST_FILES_LIMIT: () => problem(413, 'payload-too-large', 'Too many files in one request.'),
  FST_PARTS_LIMIT: () => problem(413, 'payload-too-large', 'Too many parts in one request.'),
  FST_FIELDS_LIMIT: () => problem(413, 'payload-too-large', 'Too many fields in one request.'),
  FST_INVALID_MULTIPART_CONTENT_TYPE: () => problem(415, 'unsupported-media-type', 'The body is not multipart/form-data.'),
  FST_ERR_BAD_URL: () => problem(400, 'validation', 'The request URL is malformed.'),
};

export function toProblem(error: FastifyError & { validation?: unknown }): { body: ProblemDetails; headers: Record<string, string> } {
  if (error instanceof HttpProblem) return { body: error.problem, headers: error.headers };
  if (error.validation) {
    // The count is of the entries the client would read, not of Ajv's raw errors (one per union branch tried).
    const all = invalidParams(error);
    const detail =
      all.length > MAX_LISTED_ERRORS
        ? `${all.length} inputs are invalid; the first ${MAX_LISTED_ERRORS} are listed in errors.`
        : 'One or more inputs are invalid; see errors.';
    return { body: problem(400, 'validation', detail, { errors: all.slice(0, MAX_LISTED_ERRORS) }), headers: {} };
  }
  const known = error.code ? BY_CODE[error.code] : undefined;
  if (known) return { body: known(), headers: {} };
  const status = error.statusCode ?? 500;
  if (status === 401) return { body: problem(401, 'unauthorized'), headers: {} };
  if (status === 404) return { body: problem(404, 'not-found'), headers: {} };
  if (status === 429) return { body: problem(429, 'rate-limited'), headers: {} };
  if (status >= 400 && status < 500) return { body: problem(status, 'validation', 'The request is invalid.'), headers: {} };
  return { body: problem(500, 'internal', 'An unexpected error occurred; quote request_id when reporting it.'), headers: {} };
}

export default fp(
  async function problems(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const { body, headers } = toProblem(error);
      if (body.status >= 500) request.log.error({ err: error }, 'request failed');
      return sendProblem(reply, body, headers);
    });
    // Every API answer is JSON: a client that accepts only XML gets a 406 problem (bad-inputs M4)
    // rather than a body it said it cannot read. Anything naming JSON, a wildcard or another
    // type (event streams, files) goes through.
    app.addHook('onRequest', (request, reply, done) => {
      const accept = request.headers.accept;
      // Refused only when every range names XML: without `xml` anywhere, nothing to parse.
      if (!accept?.includes('xml') || !/^\/(api|v1)\//.test(request.url)) return done();
      const ranges = accept
        .split(',')
        .map((range) => range.split(';')[0]!.trim().toLowerCase())
        .filter(Boolean);
      if (ranges.length && ranges.every((range) => range === 'application/xml' || range === 'text/xml' || range.endsWith('+xml'))) {
        sendProblem(reply, problem(406, 'not-acceptable', 'This API answers application/json (errors application/problem+json), not XML.'));
        return;
      }
      done();
    });
    // Content negotiation: a browser opening an unknown page gets the product's HTML 404, an API client the problem.
    app.setNotFoundHandler((request, reply) => {
      if ((request.method === 'GET' || request.method === 'HEAD') && prefersHtml(request.headers.accept)) return sendNotFoundPage(request, reply);
      return sendProblem(reply.header('vary', 'Accept'), problem(404, 'not-found', `No route ${request.method} ${request.url.split('?')[0]}.`));
    });
  },
  { name: 'problems' },
);
