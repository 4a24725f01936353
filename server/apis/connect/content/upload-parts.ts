// The shared multipart parser (server/plugins/body-parsers.ts, `attachFieldsToBody: 'keyValues'`)
// leaves only the bytes of a file part in the body: its file name and declared type are lost.
// Upload needs both (the 415 on a declared/detected mismatch, the display name), so for the
// upload routes (a document, a new version) this wraps `request.parts` before the parser's preValidation hook iterates it and
// records each file part's metadata. (A cleaner home is an `onFile` in body-parsers.ts.)
import type { FastifyRequest, preParsingAsyncHookHandler } from 'fastify';
import type {} from '@fastify/multipart';
import { HttpProblem } from '#server/lib/problems.js';

export interface UploadedPart {
  fieldname: string;
  filename: string;
  mimetype: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The file parts of an upload request, in order (null: not an upload). */
    uploadedParts: UploadedPart[] | null;
  }
}

export function uploadedParts(request: FastifyRequest): UploadedPart[] {
  return request.uploadedParts ?? [];
}

/** busboy's own errors (no boundary, body cut short) carry no status: they are the client's. */
function clientError(error: unknown): never {
  const code = (error as { code?: string }).code;
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    // Too many parts is a form the schema does not allow (unknown or repeated fields), not a size: 400.
    throw new HttpProblem(400, 'validation', 'The form has too many parts.', { errors: [{ pointer: '/body', detail: 'has too many parts' }] });
  }
  const status = (error as { statusCode?: number }).statusCode;
  if (status && status < 500) throw error;
  throw new HttpProblem(400, 'malformed-body', 'The multipart body is malformed.');
}

/** The `preParsing` hook of the upload route (its `routes` option in the area). */
export const captureUploadParts: preParsingAsyncHookHandler = async (request) => {
  const seen: UploadedPart[] = [];
  request.uploadedParts = seen;
  const original = request.parts;
  request.parts = function (this: FastifyRequest, ...args: Parameters<FastifyRequest['parts']>) {
    const iterator = original.apply(this, args);
    return (async function* () {
      try {
        for await (const part of iterator) {
          if (part.type === 'file') {
            seen.push({ fieldname: part.fieldname, filename: part.filename, mimetype: part.mimetype });
            const toBuffer = part.toBuffer.bind(part);
            part.toBuffer = () => toBuffer().catch(clientError);
          }
          yield part;
        }
      } catch (error) {
        clientError(error);
      }
    })();
  } as FastifyRequest['parts'];
};
