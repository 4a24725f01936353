// Body parsers for the media types the contract declares besides JSON: form posts (the OAuth
// endpoints, as OAuth libraries send them) and multipart uploads, parsed into fields that the
// contract's schemas then validate.
import fp from 'fastify-plugin';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';

/** The largest upload any operation accepts (documents); operations check their own caps. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

export default fp(
  async function bodyParsers(app: FastifyInstance) {
    await app.register(formbody, { bodyLimit: 64 * 1024 });
    await app.register(multipart, {
      attachFieldsToBody: 'keyValues',
      limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 21 },
      throwFileSizeLimit: true,
    });
  },
  { name: 'body-parsers' },
);
