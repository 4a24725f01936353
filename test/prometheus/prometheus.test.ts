// The metrics as an operator reads them: a real Prometheus (Debian's `prometheus`) scrapes a
// server (METRICS_PORT) on PostgreSQL under a short workload, with the alert rules of
// docs/operations/alerts.yml loaded, and this test reads back through Prometheus' HTTP API the
// request rate per operationId, a latency quantile and the outbox backlog; every rule loads and
// evaluates, and every query of the Grafana dashboard (docs/operations/grafana-dashboard.json)
// evaluates without error. `npm run test:prometheus` (DATABASE_URL), a step of .ci/run.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '#server/lib/ids.js';
import { freePort } from '#test/support/free-port.js';
import { eventually } from '#test/support/eventually.js';
import { freshDatabase, startServer, type Server } from '../faults/support.js';

const root = new URL('../../', import.meta.url).pathname;
const BACKLOG = 5;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let server: Server;
let prometheus: ChildProcess;
let promUrl: string;
let dir: string;

type Sample = { metric: Record<string, string>; value: [number, string] };
async function query(expr: string): Promise<Sample[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; error?: string; data: { result: Sample[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

beforeAll(async () => {
  database = await freshDatabase();
  const metricsPort = await freePort();
  server = await startServer(database.url, { SEED: '1', METRICS_PORT: String(metricsPort) });
  dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    `global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ['${join(root, 'docs/operations/alerts.yml')}']
scrape_configs:
  - job_name: chatapp
    static_configs: [{ targets: ['127.0.0.1:${metricsPort}'] }]
`,
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn('prometheus', [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  prometheus.stderr!.on('data', (chunk) => {
    log += chunk;
  });
  await eventually(async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.status === 200, {
    within: 60_000,
    what: `Prometheus ready (its log: ${log.slice(-500)})`,
    every: 200,
  });
}, 240_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await server?.stop();
  await database?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('Prometheus reads the request rate per operationId, a latency quantile and the outbox backlog', async () => {
  const seed = server.info;
  // A due outbox backlog, held by another instance's lease (so it stays put while scraped).
  const workspace = await database.db.selectFrom('workspaces').select('id').where('slug', '=', 'faults').executeTakeFirstOrThrow();
  await database.db
    .insertInto('outbox')
    .values(
      Array.from({ length: BACKLOG }, () => ({
        id: newId('dlv'),
        workspace_id: workspace.id,
        endpoint_kind: 'messaging',
        endpoint_id: newId('whe'),
        event_id: newId('evt'),
        event_type: 'message.status',
        payload: '{}',
        next_attempt_at: new Date(Date.now() - 30_000),
        lease_until: new Date(Date.now() + 600_000),
        leased_by: 'another-instance',
      })),
    )
    .execute();

  // The workload: listed apps and the account as the owner, a 404, until Prometheus has seen it grow.
  const calls = [
    () => fetch(`${seed.url}/api/login/apps`, { headers: { authorization: seed.owner! } }),
    () => fetch(`${seed.url}/api/account/me`, { headers: { authorization: seed.owner! } }),
    () => fetch(`${seed.url}/no/such/path`),
  ];
  let sent = 0;
  const rate = await eventually(
    async () => {
      await Promise.all(Array.from({ length: 30 }, (_, i) => calls[i % calls.length]!().then((r) => r.arrayBuffer())));
      sent += 30;
      const result = await query('sum by (operation) (rate(http_request_duration_seconds_count{job="chatapp"}[15s]))');
      const apps = result.find((s) => s.metric.operation === 'listLoginApps');
      return apps && Number(apps.value[1]) > 0 && result;
    },
    { within: 60_000, what: 'a request rate for listLoginApps in Prometheus', every: 500 },
  );
  const byOperation = Object.fromEntries(rate.map((s) => [s.metric.operation, Number(s.value[1])]));
  const p99 = Number(
    (await query('histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="chatapp", operation="listLoginApps"}[15s])))'))[0]!
      .value[1],
  );
  const backlog = await eventually(
    async () => {
      const [sample] = await query('chatapp_backlog_items{job="chatapp", queue="webhook_outbox"}');
      return sample && Number(sample.value[1]) === BACKLOG && sample;
    },
    { within: 30_000, what: 'the outbox backlog in Prometheus', every: 500 },
  );
  const age = Number((await query('chatapp_backlog_oldest_age_seconds{job="chatapp", queue="webhook_outbox"}'))[0]!.value[1]);
  console.log(
    `prometheus: requests sent ${sent}; rate per operation ${JSON.stringify(byOperation)}; listLoginApps p99 ${p99.toFixed(4)} s; outbox backlog ${backlog.value[1]}, oldest ${age.toFixed(0)} s`,
  );
  expect(byOperation.listLoginApps).toBeGreaterThan(0);
  expect(byOperation.unmatched).toBeGreaterThan(0);
  expect(Number.isFinite(p99) && p99 > 0 && p99 <= 10).toBe(true);
  expect(age).toBeGreaterThanOrEqual(29);

  // The alert rules load and evaluate; the dashboard's queries run.
  const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string }[] }[] } };
  const loaded = rules.data.groups.flatMap((g) => g.rules);
  expect(loaded.length).toBeGreaterThanOrEqual(9);
  await eventually(
    async () => {
      const fresh = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as typeof rules;
      return fresh.data.groups.flatMap((g) => g.rules).every((r) => r.health === 'ok');
    },
    { within: 15_000, what: 'every alert rule evaluated with health ok', every: 500 },
  );
  const dashboard = JSON.parse(readFileSync(join(root, 'docs/operations/grafana-dashboard.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  for (const target of dashboard.panels.flatMap((p) => p.targets)) {
    const expr = target.expr.replaceAll('$__rate_interval', '15s').replaceAll('$job', '.*').replaceAll('$instance', '.*');
    await expect(query(expr), expr).resolves.toBeInstanceOf(Array);
  }
}, 180_000);
