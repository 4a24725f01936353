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

export function parserProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'FST_FILES_LIMIT':
      return new HttpProblem(400, 'validation', 'Send exactly one file part, named file.', field('only one file is accepted'));
    case 'FST_REQ_FILE_TOO_LARGE':
      return new HttpProblem(
        413,
        'payload-too-large',
        `The file is larger than ${MAX_MEDIA_BYTES / 1024 / 1024} MB, the provider's largest limit (documents).`,
        field('too large'),
      );
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

/** The `preParsing` hook of a route that takes media (uploadMedia, sendMessage): its `routes` option in the area. */
export const captureMediaParts: preParsingAsyncHookHandler = async (request) => {
  const seen: FilePart[] = [];
  request.mediaFileParts = seen;
  const original = request.parts;
  request.parts = function (this: FastifyRequest, options?: Parameters<FastifyRequest['parts']>[0]) {
    const self = this;
    return (async function* () {
      try {
        // Inside the generator: busboy throws at once on a missing boundary.
        const iterator = original.call(self, { ...options, limits: { ...options?.limits, ...LIMITS } });
        for await (const part of iterator) {
          if (part.type === 'file') {
            seen.push({ fieldname: part.fieldname, filename: part.filename, mimetype: part.mimetype });
            const toBuffer = part.toBuffer.bind(part);
            part.toBuffer = () =>
              toBuffer().catch((error: unknown) => {
                throw parserProblem(error);
              });
          }
          yield part;
        }
      } catch (error) {
        throw parserProblem(error);
      }
    })();
  } as FastifyRequest['parts'];
};
