// Serves the published contract, /openapi/<api>.3.0.yaml and /openapi/<api>.3.1.yaml, the docs
// pages that present it (/docs, server/site/docs-page.ts) and the home page linking them (/,
// server/site/home-page.ts). All are public, ahead of the rate limits, and compressed.
import { readFileSync } from 'node:fs';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { API_NAMES, documentPath, documentText } from '../contract.js';
import docsPages from '../site/docs-page.js';
import homePage from '../site/home-page.js';
import { compressAnswers } from './compression.js';

export default fp(
  async function documents(app: FastifyInstance) {
    // A scope of their own, so that only these answers are compressed (./compression.ts).
    await app.register(async (scope) => {
      compressAnswers(scope);
      await published(scope);
    });
  },
  { name: 'documents' },
);

async function published(app: FastifyInstance) {
  for (const api of API_NAMES) {
    for (const version of ['3.0', '3.1'] as const) {
      const text = documentText(api, version);
      app.get(`/openapi/${api}.${version}.yaml`, async (_request, reply) =>
        reply.type('application/yaml; charset=utf-8').header('cache-control', 'public, max-age=300').send(text),
      );
    }
    // The published dereferenced variant (written by `npm run generate`): JSON, which is also
    // valid YAML 1.2, so the .yaml address serves the same bytes. Read on first request: it is
    // megabytes, and most instances (tests) never serve it.
    let dereferenced: string | undefined;
    const file = new URL('openapi.3.1.dereferenced.json', documentPath(api, '3.1'));
    for (const [ext, type] of [
      ['json', 'application/json'],
      ['yaml', 'application/yaml'],
    ] as const) {
      app.get(`/openapi/${api}.3.1.dereferenced.${ext}`, async (_request, reply) =>
        reply
          .type(`${type}; charset=utf-8`)
          .header('cache-control', 'public, max-age=300')
          .send((dereferenced ??= readFileSync(file, 'utf8'))),
      );
    }
  }
  await app.register(docsPages);
  await app.register(homePage);
}
