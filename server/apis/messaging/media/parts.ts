// Multipart on the media routes. The shared parser (server/plugins/body-parsers.ts, keyValues)
// keeps only a file part's bytes and caps files at 25 MB; these routes need the part's name and
// declared type, Meta's 100 MB document cap, and their own answers to parser failures. So, for
// them only, `request.parts` is wrapped before the parser's preValidation hook iterates it: it is
// called with these routes' limits (the plugin merges them over its own), each file part's
// metadata is recorded, and every parser error leaves as a 400/413 problem, never a 500.
import type { FastifyRequest, preParsingAsyncHookHandler } from 'fastify';
import type {} from '@fastify/multipart';
import { HttpProblem } from '#server/lib/problems.js';
import { MAX_MEDIA_BYTES } from './rules.js';

export interface FilePart {
  fieldname: string;
  filename: string;
  mimetype: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The file parts of a multipart request on a media route, in order (null: another route). */
    mediaFileParts: FilePart[] | null;
  }
}

/** The file parts of a multipart request on a media route, in order. */
export function fileParts(request: FastifyRequest): FilePart[] {
  return request.mediaFileParts ?? [];
}

/** One file and a handful of text fields (a send has seven at most). */
const LIMITS = { fileSize: MAX_MEDIA_BYTES, files: 1, fields: 10, fieldSize: 4096, parts: 11 };

const field = (detail: string) => ({ errors: [{ pointer: '/body/file', detail }] });

/** The 413 of a file over `maxBytes`, `what` naming the limit. */
const tooLarge = (maxBytes: number, what: string) =>
  new HttpProblem(413, 'payload-too-large', `The file is larger than ${maxBytes / 1024 / 1024} MB, ${what}.`, field('too large'));

const MEDIA_LIMIT = "the provider's largest limit (documents)";

export function parserProblem(error: unknown, maxBytes = MAX_MEDIA_BYTES, what = MEDIA_LIMIT): HttpProblem {
  if (error instanceof HttpProblem) return error;
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'FST_FILES_LIMIT':
      return new HttpProblem(400, 'validation', 'Send exactly one file part, named file.', field('only one file is accepted'));
    case 'FST_REQ_FILE_TOO_LARGE':
      return tooLarge(maxBytes, what);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      // Too many parts is a form the schema does not allow (unknown or repeated fields), not a size: 400.
      return new HttpProblem(400, 'validation', `The form has too many parts; at most ${LIMITS.parts} (one file, ${LIMITS.fields} fields) are accepted.`, {
        errors: [{ pointer: '/body', detail: `has more than ${LIMITS.parts} parts` }],
      });
    case 'FST_PROTO_VIOLATION':
      return new HttpProblem(400, 'validation', 'A part is named __proto__ or constructor.');
  }
  // busboy's own errors (no boundary, truncated body, bad part header) carry no status.
  const status = (error as { statusCode?: number }).statusCode;
  if (status === 413) return new HttpProblem(413, 'payload-too-large', 'A field of the form is too large.');
  return new HttpProblem(400, 'malformed-body', 'The multipart body is malformed (missing or wrong boundary, or cut short).');
}

/** What a multipart form may hold besides its file: ten fields of 4 KB and the part headers. */
const FORM_OVERHEAD = LIMITS.fields * (LIMITS.fieldSize + 1024) + 64 * 1024;

/**
 * The `preParsing` hook of a route that takes a file of at most `maxBytes` (`what` names that
 * limit in the 413; bad-inputs I9 for the contact import): a declared Content-Length that cannot
 * fit answers 413 before any byte is read, and the parser stops the file at `maxBytes` while it
 * streams, so a larger body is never buffered whole.
 */
export function captureParts(maxBytes: number, what: string): preParsingAsyncHookHandler {
  const limits = { ...LIMITS, fileSize: maxBytes };
  return async (request) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes + FORM_OVERHEAD) throw tooLarge(maxBytes, what);
    const seen: FilePart[] = [];
    request.mediaFileParts = seen;
    const original = request.parts;
    request.parts = function (this: FastifyRequest, options?: Parameters<FastifyRequest['parts']>[0]) {
      const self = this;
      return (async function* () {
        try {
          // Inside the generator: busboy throws at once on a missing boundary.
          const iterator = original.call(self, { ...options, limits: { ...options?.limits, ...limits } });
          for await (const part of iterator) {
            if (part.type === 'file') {
              seen.push({ fieldname: part.fieldname, filename: part.filename, mimetype: part.mimetype });
              const toBuffer = part.toBuffer.bind(part);
              // Refused the moment the file passes the cap (busboy's `limit`), not once the
              // client has sent the rest: the bytes beyond it are never held, nor waited for.
              part.toBuffer = () =>
                new Promise<Buffer>((resolve, reject) => {
                  part.file.once('limit', () => reject(tooLarge(maxBytes, what)));
                  toBuffer().then(resolve, (error: unknown) => reject(parserProblem(error, maxBytes, what)));
                });
            }
            yield part;
          }
        } catch (error) {
          throw parserProblem(error, maxBytes, what);
        }
      })();
    } as FastifyRequest['parts'];
  };
}

/** The `preParsing` hook of a route that takes media (uploadMedia, sendMessage): its `routes` option in the area. */
export const captureMediaParts: preParsingAsyncHookHandler = captureParts(MAX_MEDIA_BYTES, MEDIA_LIMIT);
