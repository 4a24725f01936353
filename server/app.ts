// Builds the application (no listen): the platform (store, bus, outbox, providers), plugins,
// the published documents and the areas of the four APIs (AREAS below: each area's folder holds
// everything it does).
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import pinoPretty from 'pino-pretty';
import type { Config } from './config.js';
import { handlerTable, implementedOperations, mountAreas, type Area } from './apis/area.js';
import { accountArea } from './apis/account/area.js';
import { connectContentArea } from './apis/connect/content/area.js';
import { connectOAuthArea } from './apis/connect/oauth/area.js';
import { loginArea } from './apis/login/area.js';
import { automationArea } from './apis/messaging/automation/area.js';
import { botsArea } from './apis/messaging/bots/area.js';
import { campaignsArea } from './apis/messaging/campaigns/area.js';
import { commerceArea } from './apis/messaging/commerce/area.js';
import { configurationArea } from './apis/messaging/configuration/area.js';
import { contactsArea } from './apis/messaging/contacts/area.js';
import { formsArea } from './apis/messaging/forms/area.js';
import { inboxArea } from './apis/messaging/inbox/area.js';
import { mediaArea } from './apis/messaging/media/area.js';
import { operationsArea } from './apis/messaging/operations/area.js';
import { packsArea } from './apis/messaging/packs/area.js';
import { providerArea } from './apis/messaging/provider/area.js';
import { templatesArea } from './apis/messaging/templates/area.js';
import { webhooksArea } from './apis/webhooks/area.js';
import type { ApiName } from './contract.js';
import { guardStorableText } from './lib/storable.js';
import { guardRequestBodies } from './lib/request-body.js';
import { LIMITS } from './limits.js';
import { createPlatform, type Platform, type PlatformOverrides } from './platform.js';
import { bindOperationIds } from './ops/logging.js';
import { installMetrics } from './ops/metrics.js';
import { installOverloadGuard } from './ops/overload.js';
import { traceIds, traceRoutes, tracingEnabled } from './ops/tracing.js';
import bodyParsers from './plugins/body-parsers.js';
import browser from './plugins/browser.js';
import documents from './plugins/documents.js';
import problems from './plugins/problems.js';
import rateLimits from './plugins/rate-limits.js';
import securityHeaders, { BASELINE_HEADERS } from './plugins/security-headers.js';
import { problem, sendProblem, type ProblemDetails } from './lib/problems.js';
import { isViewerUrl, sendViewerError } from './apis/connect/content/viewer-page.js';
import { validatorCompiler } from './lib/validation.js';
import { mapSerializer } from './lib/openapi-maps.js';

/** The areas of the product, in the order their plugins start (Login first: its LOGIN step). */
export const AREAS: readonly Area[] = [
  accountArea,
  loginArea,
  connectOAuthArea,
  connectContentArea,
  webhooksArea,
  configurationArea,
  contactsArea,
  inboxArea,
  templatesArea,
  campaignsArea,
  automationArea,
  mediaArea,
  commerceArea,
  botsArea,
  formsArea,
  packsArea,
  operationsArea,
  providerArea,
];

/** operationIds that have a handler, per API (the README's list, the contract suite). */
export const implemented = (api: ApiName) => implementedOperations(AREAS, api);

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    platform: Platform;
  }
}

export async function buildApp(
  config: Config,
  overrides: PlatformOverrides = {},
  logging: { stream?: { write(line: string): void } } = {},
): Promise<FastifyInstance> {
  const handlers = handlerTable(AREAS); // an operation handled twice or by nobody fails here, before anything opens
  const limits = { ...LIMITS, ...overrides.limits };
  const app = Fastify({
    logger: config.logLevel === 'silent' ? false : { ...loggerOptions(config.logLevel), stream: logging.stream ?? logStream(config) },
    // A hop count as Fastify turns one into a function (its types name no number).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    bodyLimit: limits.bodyBytes, // JSON; forms and uploads have their own caps (body-parsers.ts)
    // Slow clients (bad-inputs K7): Fastify's requestTimeout defaults to 0 (none). The whole
    // request must arrive in 30 s, its headers in 10 s; idle sockets close after 60 s.
    requestTimeout: limits.requestMs,
    connectionTimeout: limits.idleMs,
    keepAliveTimeout: limits.keepAliveMs,
    http: { maxHeaderSize: limits.headerBytes, headersTimeout: limits.headersMs, connectionsCheckingInterval: limits.checkEveryMs },
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
  // Before any route: request lines carry the operationId (with logging off, no child logger to bind).
  if (config.logLevel !== 'silent') bindOperationIds(app);
  if (tracingEnabled()) traceRoutes(app); // server spans named by route and operationId
  const platform = await createPlatform(config, overrides, app.log);
  app.decorate('config', config);
  app.decorate('platform', platform);
  installMetrics(app, platform); // METRICS_PORT: its own listener, off when unset
  app.addHook('onClose', async () => platform.close());
  app.setValidatorCompiler(validatorCompiler);
  let closing = false;
  // Callback hooks, as on every request they mostly do nothing that needs a promise.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    // An answer finished while shutting down ends its kept-alive connection (bad-inputs F-14): otherwise the
    // client (a load balancer, fetch) holds it open and close() waits out the grace period.
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('preClose', async () => {
    closing = true;
    platform.readiness.drain();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) return done();
    refuse(request, reply, problem(503, 'unavailable', 'The server is shutting down.'), { 'retry-after': '5', connection: 'close' });
  });
  // Refuses the excess early (503, Retry-After) before bodies are read; priority for webhooks and Login.
  if (config.ops.overload.maxInFlight > 0) installOverloadGuard(app, config.ops.overload, (reason) => app.metrics?.overloadRefused(reason));
  const methods = collectMethods(app);

  await app.register(securityHeaders); // first, so that 404s, 429s and every error carry them
  await app.register(problems);
  await app.register(bodyParsers);
  await app.register(documents);
  // Liveness: the process is up and its event loop answers. Nothing else is asked here (the
  // database away is readiness, /readyz): restarting the process would not bring it back.
  app.get('/healthz', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });
  app.get('/readyz', (_request, reply) => readyz(platform, reply));
  await app.register(rateLimits); // every route from here on is limited (not /healthz, /readyz, /openapi)
  // Bodies checked against each operation's declared media types and `required` (schemathesis finding).
  guardRequestBodies(app);
  guardStorableText(app); // NUL and lone surrogates: 400 before any handler (bad-inputs H8)
  await app.register(browser); // cookies and CSRF for every area's pages
  await mountAreas(app, AREAS, handlers); // every contract operation, then each area's pages, routes and work
  methodNotAllowed(app, methods);
  return app;
}

/** Readiness (server/ops/readiness.ts): 200 with each check, or 503 problem+json naming the failing ones. */
async function readyz(platform: Platform, reply: FastifyReply) {
  const { ready, draining, checks } = await platform.readiness.report();
  reply.header('cache-control', 'no-store');
  if (ready) return { status: 'ready', checks };
  const failing = Object.entries(checks)
    .filter(([, outcome]) => outcome !== 'ok')
    .map(([name, outcome]) => `${name} ${outcome}`);
  const detail = draining ? 'The server is shutting down.' : `Not ready: ${failing.join(', ')}.`;
  return sendProblem(reply.header('retry-after', '5'), problem(503, 'unavailable', detail));
}

/** TRUST_PROXY=n: the n proxies nearest to this server are trusted, whatever their addresses. */
const trustHops = (n: number) => (_address: string, hop: number) => hop < n;

/**
 * JSON lines on stdout in production (LOG_FORMAT=json); in development one readable line an
 * entry (pino-pretty, synchronous, so that a line is out before the process exits).
 */
function logStream(config: Config) {
  if (config.logFormat === 'json') return undefined;
  return pinoPretty({ sync: true, singleLine: true, colorize: Boolean(process.stdout.isTTY), translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' });
}

/**
 * Pino options (bad-inputs L3, J8): one JSON line per entry, request lines carry `reqId` (the
 * `x-request-id` answered). Nothing secret reaches a line: query values (`?token=`, `?code=`)
 * and `/l/<slug>` are censored in URLs, credential headers and fields are redacted by path,
 * error serialization drops driver fields that echo values (PostgreSQL's `detail`), and every
 * logged string is scrubbed of bearer values, query values and phone numbers.
 */
export function loggerOptions(level: string) {
  const field = (name: string) => [name, `*.${name}`];
  return {
    level,
    // Tracing on (OTEL_*): each line written inside a span carries its trace_id and span_id.
    ...(tracingEnabled() ? { mixin: traceIds } : {}),
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ id: req.id, method: req.method, url: redactUrl(req.url) }),
      err: (error: Error) => {
        // Name, message, stack and code only: drivers attach the values they saw (`detail`, `parameters`).
        const { code } = error as Error & { code?: unknown };
        return {
          type: error.constructor?.name ?? 'Error',
          message: scrubLogText(String(error.message)),
          stack: scrubLogText(String(error.stack)),
          ...(typeof code === 'string' ? { code } : {}),
        };
      },
    },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        'headers.authorization',
        'headers["x-api-key"]',
        'headers.cookie',
        ...[
          'token',
          'password',
          'secret',
          'client_secret',
          'access_token',
          'refresh_token',
          'api_key',
          'apiKey',
          'subscribeToken',
          'loginCode',
          'verificationToken',
          'webhook_secret',
          'contact_no',
          'phone',
          'from',
          'to',
        ].flatMap(field),
      ],
      censor: '[REDACTED]',
    },
    hooks: {
      // Message strings and top-level string fields are scrubbed too: `log.warn({ error: String(e) })`.
      logMethod(this: unknown, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((arg) =>
            typeof arg === 'string'
              ? scrubLogText(arg)
              : arg && typeof arg === 'object' && !(arg instanceof Error)
                ? scrubFields(arg as Record<string, unknown>)
                : arg,
          ),
        );
      },
    },
  };
}

/** Query parameters whose values say nothing secret and help reading a log. */
const PLAIN_QUERY = new Set(['limit', 'sort', 'order', 'status', 'type', 'direction', 'page', 'format', 'include']);

/** The path and query of a request URL, with secret-bearing parts censored. */
export function redactUrl(url: string): string {
  const [path = '', query] = url.split('?', 2) as [string, string | undefined];
  const safePath = path.replace(/^\/l\/(?!assets(?:\/|$))[^/]+/, '/l/[REDACTED]');
  if (query === undefined) return safePath;
  const params = query.split('&').map((pair) => {
    const [name = '', value] = pair.split('=', 2);
    return value === undefined || PLAIN_QUERY.has(name) ? pair : `${name}=[REDACTED]`;
  });
  return `${safePath}?${params.join('&')}`;
}

/** Credentials, query values and phone numbers out of free text (error messages, URLs in them). */
export function scrubLogText(text: string): string {
  return text
    .replace(/\b(Bearer|Basic|ApiKey)\s+[^\s,"']+/gi, '$1 [REDACTED]')
    .replace(/([?&][^=&\s#"']+=)[^&\s#"']+/g, '$1[REDACTED]')
    .replace(/\b(?:mk|lk_live|lk_test|whsec|cs|sk|rt|at)_[0-9A-Za-z_]{16,}/g, '[REDACTED]')
    .replace(/(?<![\w.:-])\+?\d[\d ()-]{8,18}\d(?![\w.:-])/g, '[PHONE]');
}

function scrubFields(fields: Record<string, unknown>): Record<string, unknown> {
  if (Object.getPrototypeOf(fields) !== Object.prototype) return fields; // req, res and other objects have serializers
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? scrubLogText(v) : v]));
}

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
  const headers = {
    ...BASELINE_HEADERS,
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
    'x-request-id': requestId,
    connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${reason}\r\n${head}\r\n${json}`);
  socket.destroy();
}

/**
 * A refusal answered outside any route's scope (a malformed URL, another method, shutting down):
 * under the viewer's `/l` the viewer's HTML error page with the same status, which a reader's
 * browser shows (its routes' own errors and unknown paths are handled in its scope); elsewhere
 * the problem. Hooks may not have run, so the baseline security headers are set here.
 */
function refuse(request: FastifyRequest, reply: FastifyReply, body: ProblemDetails, headers: Record<string, string> = {}): void {
  if (isViewerUrl(request.url)) sendViewerError(reply, body.status, headers);
  else sendProblem(reply, body, { ...BASELINE_HEADERS, ...headers });
}

/** Errors Fastify's router raises before any route or hook runs (`/%`, an over-long path parameter). */
function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is too long.' : 'The request URL is malformed.';
  refuse(request, reply, problem(400, 'validation', detail), { 'x-request-id': String(request.id) });
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
 * A known path with another method answers 405 with `Allow` rather than 404 (bad-inputs M4).
 * Call it after every route is registered: a later route on one of these paths would clash.
 */
function methodNotAllowed(app: FastifyInstance, paths: RouteMethods): void {
  for (const { url, methods } of [...paths.values()]) {
    const missing = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY'].filter((method) => !methods.has(method));
    if (!missing.length) continue;
    const allow = [...methods].join(', ');
    const notAllowed = (request: FastifyRequest, reply: FastifyReply) =>
      refuse(request, reply, problem(405, 'method-not-allowed', `${request.method} is not allowed here; use ${allow}.`), { allow });
    app.route({
      method: missing,
      url,
      // Answered in onRequest: before body handling, which refuses a QUERY without Content-Type (RFC 10008) with 400.
      onRequest: async (request, reply) => notAllowed(request, reply),
      handler: notAllowed,
    });
  }
}
