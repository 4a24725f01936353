// Body parsers: JSON that keeps the raw bytes (signatures are computed over them, never over a
// re-serialisation), form posts (the OAuth endpoints, as OAuth libraries send them) and, on the
// operations that take them, multipart uploads parsed into fields the contract's schemas validate.
import fp from 'fastify-plugin';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The largest upload any operation accepts (documents); operations check their own caps. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received (JSON requests). */
    rawBody?: Buffer;
    /**
     * Set by a route's onRequest hook: checks the raw bytes (a signature) before they are parsed;
     * a rejection refuses the request with its error.
     */
    beforeParse?: (request: FastifyRequest, raw: Buffer) => Promise<void>;
  }
}

/**
 * Multipart uploads, for the operations that declare a multipart body only: the plugin adds
 * hooks to every route of its context (one on request, one before validation, one on response),
 * so it is registered in a context of their own (server/apis/area.ts) rather than app-wide.
 */
export async function multipartUploads(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 21 },
    throwFileSizeLimit: true,
  });
}

export default fp(
  async function bodyParsers(app: FastifyInstance) {
    // Fastify's own parser (secure-json-parse), refusing `__proto__` and `constructor.prototype`
    // keys instead of passing them on (bad-inputs J6). Duplicate keys stay last-wins, as JSON.parse:
    // the validator and the handler see the same parsed object (bad-inputs H11).
    const secureParse = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    // `; charset=utf-8` is allowed (OkHttp, which the java clients use, always adds it; JSON is
    // UTF-8, RFC 8259); any other parameter or charset stays unsupported (415).
    app.addContentTypeParser(/^application\/([a-z0-9.+-]+\+)?json(\s*;\s*charset="?utf-8"?)?$/i, { parseAs: 'buffer' }, (request, body, done) => {
      const raw = body as Buffer;
      request.rawBody = raw;
      if (request.beforeParse) {
        request.beforeParse(request, raw).then(
          () => parseJson(request, raw, done),
          (error: Error) => done(error, undefined),
        );
        return;
      }
      parseJson(request, raw, done);
    });
    function parseJson(request: FastifyRequest, raw: Buffer, done: (error: Error | null, value?: unknown) => void) {
      if (raw.length === 0) return done(Object.assign(new Error('empty JSON body'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 }), undefined);
      secureParse(request, raw.toString('utf8'), (error, value) => {
        if (error) done(Object.assign(new Error('invalid JSON body'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
        else done(null, value);
      });
    }
    await app.register(formbody, { bodyLimit: 64 * 1024 });
  },
  { name: 'body-parsers' },
);
