// Builds the application (no listen): plugins, the published documents and the four APIs.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { registerApis } from './apis/registry.js';
import bodyParsers from './plugins/body-parsers.js';
import documents from './plugins/documents.js';
import problems from './plugins/problems.js';
import { validatorCompiler } from './lib/validation.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
  }
}

export async function buildApp(config: Config): Promise<FastifyInstance> {
  const app = Fastify({
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: 1024 * 1024,
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    return503OnClosing: true,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    routerOptions: { maxParamLength: 512 },
  });
  app.decorate('config', config);
  app.setValidatorCompiler(validatorCompiler);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
  });

  await app.register(problems);
  await app.register(bodyParsers);
  await app.register(documents);
  app.get('/healthz', async () => ({ status: 'ok' }));
  await registerApis(app);
  return app;
}
