// Serves the published contract: /openapi/<api>.3.0.yaml and /openapi/<api>.3.1.yaml.
import { readFileSync } from 'node:fs';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { API_NAMES, documentPath } from '../apis/registry.js';

export default fp(
  async function documents(app: FastifyInstance) {
    for (const api of API_NAMES) {
      for (const version of ['3.0', '3.1'] as const) {
        const text = readFileSync(documentPath(api, version), 'utf8');
        app.get(`/openapi/${api}.${version}.yaml`, async (_request, reply) =>
          reply.type('application/yaml; charset=utf-8').header('cache-control', 'public, max-age=300').send(text),
        );
      }
    }
  },
  { name: 'documents' },
);
