// OpenTelemetry traces (server/ops/tracing.ts) through an OTLP/HTTP receiver of this test's own
// (JSON protocol): one Messaging send is one trace, continued from the caller's `traceparent`,
// with the server span, its SQL (pg) and the provider call (undici), whose `traceparent` the fake
// Cloud API receives; a malformed `traceparent` starts a new trace instead of failing; a webhook
// delivery is a trace of its own, linked to the request that queued it, its `traceparent` seen by
// the receiver; log lines carry the trace id. PostgreSQL only: PGlite has no driver to instrument.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChild, type Child } from '../../../bench/lib/child.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { eventually } from '#test/support/eventually.js';
import { startReceiver } from '#test/support/receiver.js';
import { onPostgres, openTestStore } from '#test/support/store.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}
const SERVER = 2;
const CLIENT = 3;
const CUSTOMER = '+4915112345678';

/** A minimal OTLP/HTTP JSON receiver: every span of every POST /v1/traces, flattened. */
async function startOtlpReceiver() {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resource of body.resourceSpans ?? [])
        for (const scope of resource.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              attributes: Object.fromEntries(
                (span.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [a.key, Object.values(a.value)[0]]),
              ),
              links: span.links ?? [],
            });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { spans, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, close: () => new Promise((r) => server.close(r)) };
}

describe.runIf(onPostgres)('traces', () => {
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let fake: FakeProvider;
  let hooks: Awaited<ReturnType<typeof startReceiver>>;
  let store: Awaited<ReturnType<typeof openTestStore>>;
  let server: Child<{ url: string; key: string; number: string; endpointId: string }>;
  const logs: string[] = [];

  beforeAll(async () => {
    [otlp, fake, hooks, store] = await Promise.all([startOtlpReceiver(), new FakeProvider().start(), startReceiver(), openTestStore()]);
    server = await startChild('../../test/unit/ops/traced-server.ts', {
      DATABASE_URL: store.url!,
      GRAPH_API_URL: fake.baseUrl,
      WEBHOOK_URL: hooks.url,
      CUSTOMER,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'chatapp-test',
      START_TIMEOUT_SECONDS: '120',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
    server.process.stdout!.on('data', (chunk) =>
      logs.push(
        ...String(chunk)
          .split('\n')
          .filter((l) => l.startsWith('{"level"')),
      ),
    );
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    await Promise.all([otlp?.close(), fake?.stop(), hooks?.close()]);
    await store?.close();
  });

  const send = (traceparent: string) =>
    fetch(`${server.info.url}/api/chatapp/send`, {
      method: 'POST',
      headers: { 'x-api-key': server.info.key, 'content-type': 'application/json', traceparent },
      body: JSON.stringify({ contact_no: CUSTOMER, chatapp_phone_number: server.info.number, messageType: 'text', message: 'Hi' }),
    });

  it('a send is one trace: continued from the caller, its SQL and the provider call inside, traceparent passed on', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await send(`00-${traceId}-${callerSpan}-01`);
    expect(res.status, await res.clone().text()).toBeLessThan(300);

    const call = fake.requests.filter((r) => r.path.endsWith('/messages')).at(-1)!;
    const [, seenTrace, seenParent] = String(call.headers.traceparent).split('-');
    expect(seenTrace).toBe(traceId);

    const trace = () => otlp.spans.filter((s) => s.traceId === traceId);
    const spans = await eventually(
      () => {
        const all = trace();
        return (
          all.some((s) => s.kind === SERVER) &&
          all.some((s) => s.spanId === seenParent) &&
          all.some((s) => s.attributes['db.system'] || s.attributes['db.system.name']) &&
          all
        );
      },
      { within: 15_000, what: 'the server, SQL and provider spans at the OTLP receiver' },
    );
    const root = spans.find((s) => s.kind === SERVER)!;
    expect(root.parentSpanId).toBe(callerSpan);
    expect(root.name).toBe('POST /api/chatapp/send');
    expect(root.attributes['chatapp.operation_id']).toBe('sendMessage');
    const provider = spans.find((s) => s.spanId === seenParent)!;
    expect(provider.kind).toBe(CLIENT);
    // Every span of the trace hangs from the server span (directly or through another).
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    for (const span of spans) {
      let at: OtlpSpan | undefined = span;
      while (at && at !== root) at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined;
      expect(at, `${span.name} under the server span`).toBe(root);
    }
    // The request's log lines carry its trace id beside its request id and operationId.
    const lines = await eventually(
      () => {
        const own = logs.map((l) => JSON.parse(l)).filter((l) => l.trace_id === traceId);
        return own.length >= 2 && own;
      },
      { within: 5_000, what: 'the request lines of the send' },
    );
    for (const line of lines) expect(line).toMatchObject({ reqId: expect.any(String), operationId: 'sendMessage', span_id: root.spanId });
  });

  it('a malformed traceparent is ignored: a new trace, never a 500', async () => {
    const res = await send('00-not-a-trace-id-01');
    expect(res.status).toBeLessThan(300);
    const seen = String(fake.requests.filter((r) => r.path.endsWith('/messages')).at(-1)!.headers.traceparent);
    expect(seen).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  });

  it('a webhook delivery is a trace of its own, linked to the request that queued it', async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${server.info.url}/api/webhook-endpoints/${server.info.endpointId}/test`, {
      method: 'POST',
      headers: { 'x-api-key': server.info.key, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    const hook = await eventually(() => hooks.received.at(-1), { within: 15_000, what: 'the test delivery' });
    const [, deliveryTrace, deliveryParent] = String(hook.headers.traceparent).split('-');
    expect(deliveryTrace).not.toBe(traceId);
    const delivery = await eventually(() => otlp.spans.find((s) => s.name === 'webhook delivery' && s.traceId === deliveryTrace), {
      within: 15_000,
      what: 'the delivery span',
    });
    expect(delivery.parentSpanId).toBeUndefined();
    expect(delivery.links).toEqual([expect.objectContaining({ traceId })]);
    const post = await eventually(() => otlp.spans.find((s) => s.spanId === deliveryParent), { within: 15_000, what: 'the POST span' });
    expect(post).toMatchObject({ kind: CLIENT, parentSpanId: delivery.spanId, traceId: deliveryTrace });
  });
});
