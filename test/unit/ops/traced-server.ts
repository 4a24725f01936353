// A server process with tracing on (the OTEL_* variables of its environment), started the way
// server/server.ts starts one: the SDK first, then the app's modules. It seeds a workspace whose
// number is on the fake Cloud API (GRAPH_API_URL), with a customer inside the 24-hour window and
// a webhook endpoint at WEBHOOK_URL, and prints `{"url":…}` with the credentials (bench/lib/child.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTracing } from '#server/ops/tracing.js';

const stopTracing = await startTracing();
if (!stopTracing) throw new Error('tracing is off: set OTEL_TRACES_EXPORTER or an OTLP endpoint');
// Only now: pg, node:http and the app are instrumented as they load.
const { buildApp } = await import('#server/app.js');
const { loadConfig } = await import('#server/config.js');
const { exitOnSignals } = await import('#server/shutdown.js');
const { cloudTenant, cloudCustomerWrote } = await import('../messaging/inbox/support.js');

const app = await buildApp(loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'traced-')), LOG_LEVEL: 'warn', DEMO: 'false', ...process.env, PORT: '0' }));
app.addHook('onClose', stopTracing);
exitOnSignals(app);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const t = await cloudTenant(app);
await cloudCustomerWrote(app, t, process.env.CUSTOMER!);
const endpoint = await app.inject({
  method: 'POST',
  url: '/api/webhook-endpoints',
  headers: t.headers,
  payload: { url: process.env.WEBHOOK_URL, enabled_events: ['message.received'] },
});
if (endpoint.statusCode !== 201) throw new Error(`webhook endpoint: ${endpoint.statusCode} ${endpoint.body}`);
console.log(JSON.stringify({ url, key: t.key, number: t.number, endpointId: endpoint.json().id }));
