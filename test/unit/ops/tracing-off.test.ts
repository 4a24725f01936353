// Tracing off (the default: no OTEL_* exporter named) costs nothing on the request path: no
// OpenTelemetry SDK is registered, no hook names spans, the logger has no trace-id mixin, and a
// get, a list and a post through the whole pipeline call nothing of the OpenTelemetry API.
// Tracing on is proven in tracing.test.ts; its cost per request is a bench figure.
import { context, propagation, trace } from '@opentelemetry/api';
import { afterEach, expect, it, vi } from 'vitest';
import { loggerOptions } from '#server/app.js';
import { tracingEnabled } from '#server/ops/tracing.js';
import { buildShared } from '#test/helper.js';
import { workspace } from '#test/security/support.js';

afterEach(() => vi.restoreAllMocks());

it('is off unless an exporter is named, and then nothing of it runs per request', async () => {
  expect(tracingEnabled({})).toBe(false);
  expect(tracingEnabled({ OTEL_SERVICE_NAME: 'chatapp' })).toBe(false);
  expect(tracingEnabled({ OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
  expect(loggerOptions('info')).not.toHaveProperty('mixin');

  const app = await buildShared();
  const w = await workspace(app);
  const calls = [
    vi.spyOn(trace, 'getActiveSpan'),
    vi.spyOn(trace, 'getSpan'),
    vi.spyOn(trace, 'getTracer'),
    vi.spyOn(context, 'active'),
    vi.spyOn(context, 'with'),
    vi.spyOn(propagation, 'inject'),
    vi.spyOn(propagation, 'extract'),
  ];
  const headers = { ...w.headers, 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
  const created = await app.inject({ method: 'POST', url: '/api/contacts', headers, payload: { contact_no: '+4915112398765', name: 'Off' } });
  expect(created.statusCode).toBe(201);
  expect((await app.inject({ url: `/api/contacts/${created.json().id}`, headers })).statusCode).toBe(200);
  expect((await app.inject({ url: '/api/contacts?limit=20', headers })).statusCode).toBe(200);
  for (const spy of calls) expect(spy).not.toHaveBeenCalled();
  // No SDK registered: the API's tracer is its no-op, whose spans record nothing.
  expect(trace.getTracer('chatapp').startSpan('x').isRecording()).toBe(false);
}, 60_000); // the first app a worker builds also compiles the contract's validators
