// Builds the application (no listen): the platform (store, bus, outbox, providers), plugins,
// the published documents and the four APIs.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Config } from './config.js';
import { registerApis } from './apis/registry.js';
import { setupAreas } from './apis/areas.js';
import { createInboundSink } from './apis/messaging/inbound-sink.js';
import { createPlatform, type Platform, type PlatformOverrides } from './platform.js';
import bodyParsers from './plugins/body-parsers.js';
import documents from './plugins/documents.js';
import problems from './plugins/problems.js';
import rateLimits from './plugins/rate-limits.js';
import securityHeaders, { BASELINE_HEADERS } from './plugins/security-headers.js';
import { problem, sendProblem } from './lib/problems.js';
import { validatorCompiler } from './lib/validation.js';
import { mapSerializer } from './lib/openapi-maps.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    platform: Platform;
  }
}

export async function buildApp(config: Config, overrides: PlatformOverrides = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger:
      config.logLevel === 'silent'
        ? false
        : {
            level: config.logLevel,
            // Query strings can carry credentials (the login stream's `token`): never log them.
            serializers: { req: (req: { method: string; url: string; id: string }) => ({ id: req.id, method: req.method, url: req.url.split('?')[0] }) },
            redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'],
          },
    bodyLimit: LIMITS.bodyBytes, // JSON; forms and uploads have their own caps (body-parsers.ts)
    // Slow clients (catalogue K7): Fastify's requestTimeout defaults to 0 (none). The whole
    // request must arrive in 30 s, its headers in 10 s; idle sockets close after 60 s.
    requestTimeout: LIMITS.requestMs,
    connectionTimeout: LIMITS.idleMs,
    keepAliveTimeout: LIMITS.keepAliveMs,
    // Node checks those deadlines every connectionsCheckingInterval (30 s by default).
    http: { maxHeaderSize: LIMITS.headerBytes, headersTimeout: LIMITS.headersMs, connectionsCheckingInterval: 2_000 },
    return503OnClosing: false, // its 503 is not problem+json: the preClose/onRequest hooks below answer instead
    clientErrorHandler,
    frameworkErrors,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    routerOptions: { maxParamLength: 512 },
    // Response schemas from the 3.1 documents use keywords without a sibling `type` (nullable
    // refs): valid JSON Schema, which Ajv's strict mode would warn about on every first response.
    serializerOpts: { ajv: { strict: false } },
    // Response schemas reach fast-json-stringify with maps it can read (server/lib/openapi-maps.ts).
    schemaController: { compilersFactory: { buildSerializer: mapSerializer } },
  });
  const platform = await createPlatform(config, overrides);
  app.decorate('config', config);
  app.decorate('platform', platform);
  app.addHook('onClose', async () => platform.close());
  app.setValidatorCompiler(validatorCompiler);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) return sendProblem(reply, problem(503, 'unavailable', 'The server is shutting down.'), { ...BASELINE_HEADERS, 'retry-after': '5', connection: 'close' });
  });
  const methods = collectMethods(app);

  await app.register(securityHeaders); // first, so that 404s, 429s and every error carry them
  await app.register(problems);
  await app.register(bodyParsers);
  await app.register(documents);
  app.get('/healthz', async (_request, reply) => {
    try {
      await sql`select 1`.execute(platform.store.db);
      return { status: 'ok' };
    } catch {
      return sendProblem(reply.header('retry-after', '5'), problem(503, 'unavailable', 'The database is not reachable.'));
    }
  });
  await app.register(rateLimits); // every route from here on is limited (not /healthz, /openapi)
  await registerApis(app);
  (await import('./apis/login/verification.js')).startLogin(app); // LOGIN messages, expiry, streams
  await setupAreas(app); // Connect and Messaging: schemes, pages outside the contract, workers
  await app.register((await import('./plugins/pages.js')).default); // sign-in page (session cookie, CSRF)
  methodNotAllowed(app, methods);
  platform.setInboundSink(createInboundSink(app)); // the sandbox posts through the provider's signed route
  return app;
}

/** Sizes and timeouts (README, "Limits"). */
export const LIMITS = {
  bodyBytes: 1024 * 1024,
  headerBytes: 8 * 1024, // request line and all headers; Node's default is 16 KiB
  headersMs: 10_000,
  requestMs: 30_000,
  idleMs: 60_000,
  keepAliveMs: 72_000, // above common load-balancer idle timeouts (60 s)
};

/**
 * Errors Node's HTTP parser reports before Fastify sees a request (headers over maxHeaderSize,
 * timeouts, broken HTTP): written straight to the socket, so built here rather than by the
 * error handler. Still problem+json; `instance` is absent because no URL was parsed.
 */
function clientErrorHandler(this: FastifyInstance, error: FastifyError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, body] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', problem(431, 'headers-too-large', `The request line and headers exceed ${LIMITS.headerBytes} bytes.`)]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', problem(408, 'malformed-body', 'The request did not arrive in time.')]
        : [400, 'Bad Request', problem(400, 'malformed-body', 'The request is not valid HTTP/1.1.')];
  const requestId = randomUUID();
  // Only the code is logged: the error carries the raw bytes, credentials included.
  this.log.debug({ code: error.code, request_id: requestId }, 'client error');
  const json = JSON.stringify({ ...body, request_id: requestId });
  const headers = { ...BASELINE_HEADERS, 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(json), 'x-request-id': requestId, connection: 'close' };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${reason}\r\n${head}\r\n${json}`);
  socket.destroy();
}

/** Errors Fastify's router raises before any route or hook runs (`/%`, an over-long path parameter). */
function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is too long.' : 'The request URL is malformed.';
  sendProblem(reply, problem(400, 'validation', detail), { ...BASELINE_HEADERS, 'x-request-id': String(request.id) });
}

type RouteMethods = Map<string, { url: string; methods: Set<string> }>;

/** The methods each registered path answers, filled as routes are added. */
function collectMethods(app: FastifyInstance): RouteMethods {
  const paths: RouteMethods = new Map();
  app.addHook('onRoute', (route) => {
    if (route.url.includes('*') || route.constraints) return;
    // The router tells `/a/:id` and `/a/:name` apart by position only, so must we.
    const shape = route.url.replace(/:\w+/g, ':');
    const entry = paths.get(shape) ?? paths.set(shape, { url: route.url, methods: new Set() }).get(shape)!;
    for (const method of [route.method].flat()) entry.methods.add(method);
  });
  return paths;
}

/**
 * A known path with another method answers 405 with `Allow` rather than 404 (catalogue M4).
 * Call it after every route is registered: a later route on one of these paths would clash.
 */
function methodNotAllowed(app: FastifyInstance, paths: RouteMethods): void {
  for (const { url, methods } of [...paths.values()]) {
    const missing = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => !methods.has(method));
    if (!missing.length) continue;
    const allow = [...methods].join(', ');
    app.route({
      method: missing,
      url,
      handler: (request, reply) => sendProblem(reply, problem(405, 'method-not-allowed', `${request.method} is not allowed here; use ${allow}.`), { allow }),
    });
  }
}
