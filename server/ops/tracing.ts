// OpenTelemetry traces, configured by the standard OTEL_* variables and off unless an exporter
// is named (OTEL_TRACES_EXPORTER, or an OTLP endpoint in OTEL_EXPORTER_OTLP_ENDPOINT /
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true turns it off whatever the rest says.
// Off, nothing of the SDK is loaded: the @opentelemetry/api calls in the code are its no-ops.
//
// On, the maintained instrumentations make one trace of a request: the HTTP server span (which
// continues an inbound W3C `traceparent`; a malformed one is ignored and a new trace begins), the
// SQL it runs (pg, on PostgreSQL) and its outbound calls (undici: the provider, webhook receivers,
// `http_request` nodes), each carrying `traceparent` to the next hop. Work done later in the
// background (a webhook delivery) is its own trace, linked to the request that queued it.
import { register } from 'node:module';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Link, type Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { processEnvironment } from '#server/config.js';

export function tracingEnabled(env: NodeJS.ProcessEnv = processEnvironment()): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  const exporters = env.OTEL_TRACES_EXPORTER;
  if (exporters) return exporters.split(',').some((name) => name.trim() && name.trim() !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the SDK before the app's modules load (server/server.ts imports the app afterwards):
 * the instrumentations patch `pg` and `node:http` as they are imported. Resolves with the
 * function that flushes and stops it, or undefined when tracing is off.
 */
export async function startTracing(env: NodeJS.ProcessEnv = processEnvironment()): Promise<(() => Promise<void>) | undefined> {
  if (!tracingEnabled(env)) return undefined;
  // ES module imports are only seen through this loader hook (import-in-the-middle).
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { HttpInstrumentation }, { PgInstrumentation }, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || 'chatapp',
    instrumentations: [
      new HttpInstrumentation({
        // Probes are not traffic: a load balancer's health checks would be most of the traces.
        ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz)(\?|$)/.test(req.url ?? ''),
      }),
      // SQL spans only inside a trace: the workers' polling would otherwise be a trace a query.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation(),
    ],
  });
  sdk.start();
  return () => sdk.shutdown();
}

/** Names the request's server span by its route and operationId (`POST /api/chatapp/send`). */
export function traceRoutes(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const span = trace.getActiveSpan();
    const route = request.routeOptions.url;
    if (span && route) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
      const operation = (request.routeOptions.config as { operation?: { operationId: string } }).operation;
      if (operation) span.setAttribute('chatapp.operation_id', operation.operationId);
    }
    done();
  });
}

/** The log line's trace and span ids (pino mixin), when a span is active. */
export function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** The active span's `traceparent`, to store with work done later (null when tracing is off). */
export function currentTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

const tracer = trace.getTracer('chatapp');

/**
 * Runs background work as a trace of its own (a new root), linked to the request that caused it
 * when its stored `traceparent` is given. Spans started inside (SQL, outbound calls) are its children.
 */
export function inBackgroundSpan<T>(
  name: string,
  cause: string | null | undefined,
  attributes: Record<string, string | number>,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const links: Link[] = [];
  if (cause) {
    const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent: cause }));
    if (linked) links.push({ context: linked });
  }
  return tracer.startActiveSpan(name, { root: true, kind: SpanKind.CONSUMER, links, attributes }, ROOT_CONTEXT, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}
