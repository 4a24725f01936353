// Prometheus metrics (server/ops/metrics.ts): served on METRICS_PORT only, in the text format a
// Prometheus scrapes; requests counted by operationId, method and status class; backlogs read
// from the tables; and, after a varied workload full of tenant ids, credentials, phone numbers and
// client-chosen paths, no label value anywhere is one of them: every value is from a fixed set.
import { randomInt } from 'node:crypto';
import { expect, it } from 'vitest';
import { contractOperations } from '#server/contract.js';
import { newId } from '#server/lib/ids.js';
import { loadConfig } from '#server/config.js';
import { build } from '#test/helper.js';
import { labelProblems, parseExposition } from '../../../scripts/lib/metrics-labels.mjs';
import { workspace } from '#test/security/support.js';

const parse = parseExposition;

const scrape = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await res.text());
};

it('is off unless METRICS_PORT is set, and never on the public port', async () => {
  const app = await build();
  expect(app.metrics).toBeUndefined();
  expect((await app.inject({ url: '/metrics' })).statusCode).toBe(404);
}, 60_000); // the first app a worker builds also compiles the contract's validators

it('counts requests by operation, reads backlogs, and keeps every label value in a fixed set', async () => {
  const app = await build({ env: { METRICS_PORT: '0' } });
  expect((await app.inject({ url: '/metrics' })).statusCode).toBe(404); // the public port has none
  const url = app.metrics!.url!;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  expect((await fetch(url.replace('/metrics', '/other'))).status).toBe(404);

  // A varied workload: successes, 4xx of every kind, ids, phone numbers and keys in paths and queries.
  const w = await workspace(app);
  const phone = `+49151${randomInt(10_000_000, 99_999_999)}`;
  const headers = { ...w.headers, 'content-type': 'application/json' };
  const created = await app.inject({ method: 'POST', url: '/api/contacts', headers, payload: { contact_no: phone, name: 'Lena Fischer' } });
  expect(created.statusCode).toBe(201);
  const contactId = created.json().id as string;
  const calls = [
    { url: '/api/contacts?limit=5', headers },
    { url: `/api/contacts/${contactId}`, headers },
    { url: `/api/contacts/${newId('ctc')}`, headers }, // 404
    { url: `/api/contacts?search=${encodeURIComponent(phone)}`, headers },
    { url: '/api/contacts', headers: { 'x-api-key': `${w.key}x` } }, // 401 with a credential-like value
    { url: `/api/contacts/${phone}`, headers },
    { url: `/no/such/${w.workspaceId}/${phone}` }, // unmatched
    { url: `/api/contacts/${contactId}`, method: 'PATCH' as const, headers, payload: { name: 'x'.repeat(5000) } },
    { url: '/api/contacts', method: 'DELETE' as const, headers }, // 405
    { url: '/healthz' },
    { url: '/readyz' },
    { url: `/api/account`, headers: { authorization: w.owner } },
  ];
  for (const call of calls) await app.inject({ method: 'GET', ...call });

  // An outbox row due a minute ago, held by another instance: backlog 1, about 60 s old.
  const db = app.platform.store.db;
  await db
    .insertInto('outbox')
    .values({
      id: newId('dlv'),
      workspace_id: w.workspaceId,
      endpoint_kind: 'messaging',
      endpoint_id: newId('whe'),
      event_id: newId('evt'),
      event_type: 'message.status',
      payload: '{}',
      next_attempt_at: new Date(Date.now() - 60_000),
      lease_until: new Date(Date.now() + 600_000),
      leased_by: 'another-instance',
    })
    .execute();

  const series = await scrape(url);
  const count = (labels: Record<string, string>) =>
    series.find((s) => s.name === 'http_request_duration_seconds_count' && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
  expect(count({ api: 'messaging', operation: 'listContacts', method: 'GET', status_class: '2xx' })).toBe(2);
  expect(count({ api: 'messaging', operation: 'createContact', method: 'POST', status_class: '2xx' })).toBe(1);
  expect(count({ api: 'messaging', operation: 'getContact', method: 'GET', status_class: '4xx' })).toBeGreaterThanOrEqual(2);
  expect(count({ api: 'none', operation: 'unmatched', method: 'GET', status_class: '4xx' })).toBeGreaterThanOrEqual(2); // /metrics, /no/such/…
  expect(count({ api: 'none', operation: '/readyz', method: 'GET', status_class: '2xx' })).toBe(1);
  const backlog = (name: string, queue: string) => series.find((s) => s.name === name && s.labels.queue === queue)?.value;
  expect(backlog('chatapp_backlog_items', 'webhook_outbox')).toBe(1);
  expect(backlog('chatapp_backlog_oldest_age_seconds', 'webhook_outbox')).toBeGreaterThanOrEqual(59);
  for (const queue of ['provider_inbox', 'campaign_recipients', 'automation_waits', 'automation_sequences'])
    expect(backlog('chatapp_backlog_items', queue)).toBeGreaterThanOrEqual(0);
  for (const name of ['nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes', 'chatapp_sse_streams_open', 'chatapp_ready'])
    expect(series.some((s) => s.name === name)).toBe(true);
  expect(series.find((s) => s.name === 'chatapp_ready')?.value).toBe(1);

  // Cardinality: every label value is from a fixed set, none is a value the workload chose.
  expect(
    labelProblems(
      series,
      contractOperations().map((o) => o.operationId),
    ),
  ).toEqual([]);
  const secrets = [w.workspaceId, w.key, phone, phone.slice(1), contactId, w.owner.slice(7)];
  for (const s of series) {
    for (const value of Object.values(s.labels)) {
      for (const secret of secrets) expect(value.includes(secret), `${s.name}: ${value}`).toBe(false);
    }
  }
  const requestSeries = series.filter((s) => s.name === 'http_request_duration_seconds_count');
  expect(requestSeries.length).toBeLessThan(calls.length + 2);
});

it('METRICS_PORT: an integer port, never the public PORT in production', () => {
  const base = { PORT: '8080', NODE_ENV: 'production', PUBLIC_URL: 'https://chat.example', DATABASE_URL: 'postgres://db/x', SECRET_KEY: 'k'.repeat(48) };
  expect(() => loadConfig({ ...base, METRICS_PORT: '8080' })).toThrow(/METRICS_PORT must differ from PORT/);
  expect(() => loadConfig({ ...base, METRICS_PORT: 'nine' })).toThrow(/METRICS_PORT must be an integer/);
  expect(loadConfig({ ...base, METRICS_PORT: '9464' }).ops).toMatchObject({ metricsPort: 9464, metricsHost: '127.0.0.1' });
  expect(loadConfig({ ...base }).ops.metricsPort).toBeUndefined();
});
