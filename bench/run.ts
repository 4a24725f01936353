// `npm run bench` / `npm run bench:quick`: prints `ratio <name> <value>` per figure (higher is
// better, 1.0 = parity with the baseline or the goal) and writes raw figures to
// bench/results/latest.json. Servers run as child processes; load comes from this process.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startMocks } from '../mocks/mocks.mjs';
import { freePort } from '#test/support/free-port.js';
import { startChild } from './lib/child.js';
import { machine, machineNote } from './lib/machine.js';
import { buildDist } from './servers/dist.js';
import pg from 'pg';
import { compare } from './lib/load.js';
import { figureRequest, type ServerInfo } from './lib/http-figures.js';
import { measureLoginPush, type LoginTarget } from './lib/login-push.js';
import { measureStreamMemory } from './lib/sse-memory.js';
import { measureCampaign, withBenchDatabase } from './lib/campaign.js';
import { measureWebhookDeliveries } from './lib/webhook-deliveries.js';
import { measureProviderIngest } from './lib/provider-ingest.js';
import { measureProviderInbox } from './lib/provider-inbox.js';
import { measureMetricsCost, measureOverload, measureTracingCost } from './lib/overload.js';

const quick = process.argv.includes('--quick');
const rounds = quick ? 3 : 5;
const durationSec = quick ? 4 : 10;
const warmupSec = quick ? 2 : 5;
const connections = 10;
// `--only=http,login,campaign,webhooks,provider,inbox,ops,generate` runs some groups of figures (for profiling work).
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (group: string) => !only || only.includes(group);

console.log(machineNote());

const figures: Record<string, unknown> = {};
const ratios: Record<string, number> = {};

// The embedded-store figures must run on PGlite: a DATABASE_URL in this process's environment (CI
// exports one for its PostgreSQL steps) would be inherited by every server child, which would then
// share one database, each sealing it with its own generated key (bad-inputs L7 refuses the next one).
// PostgreSQL figures name their database explicitly, from BENCH_DATABASE_URL.
delete process.env.DATABASE_URL;

// Whole stack ÷ bare Fastify running the same queries on the same kind of store: an owner GET,
// the first page of ~10,000 contacts and a validated POST (last, as it adds contacts). `suffix`
// names the PostgreSQL run; `env` gives each server its own database there.
const listContacts = 10_000;
// The groups whose servers run from dist/ (bench/servers/full.ts): built once, when a source changed.
if (wanted('http') || wanted('ops') || only?.some((group) => group === 'overload' || group === 'metrics')) buildDist();
async function httpFigures(suffix: string, fullEnv: Record<string, string> = {}, bareEnv: Record<string, string> = {}) {
  const seed = { SEED_CONTACTS: String(listContacts) };
  const full = await startChild<ServerInfo>('full.ts', { ...fullEnv, ...seed });
  const bare = await startChild<ServerInfo>('bare.ts', { ...bareEnv, ...seed });
  try {
    const sized = { connections, durationSec };
    for (const figure of ['get', 'list', 'post'] as const) {
      const name = `${figure}_vs_bare_fastify${suffix}`;
      const r = await compare(
        { ...figureRequest(figure, full.info), ...sized },
        { ...figureRequest(figure, { ...bare.info, token: full.info.token, apiKey: full.info.apiKey }), ...sized },
        rounds,
        warmupSec,
      );
      ratios[name] = r.subject.rps / r.baseline.rps;
      figures[name] = r;
    }
    if (suffix) return;
    // Not a goal: the same list on our server and on the Prism mock answering from the spec's examples.
    const port = await freePort();
    const mock = await startMocks({ ports: { messaging: port } });
    try {
      const mockServer = { url: `http://127.0.0.1:${port}`, token: '', apiKey: 'mk_bench' };
      const prism = await compare({ ...figureRequest('list', full.info), ...sized }, { ...figureRequest('list', mockServer), ...sized }, rounds, warmupSec);
      figures.server_vs_prism = prism;
      console.log(
        `note: server_vs_prism ${(prism.subject.rps / prism.baseline.rps).toFixed(3)} (ours ${Math.round(prism.subject.rps)} rps, Prism ${Math.round(prism.baseline.rps)})`,
      );
    } finally {
      await mock.stop();
    }
  } finally {
    await full.stop();
    await bare.stop();
  }
}
const adminUrl = process.env.BENCH_DATABASE_URL;
// BENCH_REDIS_URL: the same figures with the limits in Redis (`…_redis`, embedded store), what a
// fleet pays per request for limits that hold across instances.
const redisUrl = process.env.BENCH_REDIS_URL;
if (wanted('http')) {
  await httpFigures('');
  if (redisUrl) await httpFigures('_redis', { REDIS_URL: redisUrl });
  if (adminUrl)
    await withBenchDatabase(adminUrl, (fullUrl) =>
      withBenchDatabase(adminUrl, (bareUrl) => httpFigures('_postgres', { DATABASE_URL: fullUrl }, { DATABASE_URL: bareUrl })),
    );
}

// Login push and stream memory on the embedded store (one instance).
const APP_SECRET = 'bench-provider-app-secret';
// Sign-ins before the measured ones, as warm-up (the HTTP figures warm up for warmupSec).
const loginWarmup = quick ? 50 : 100;
type LoginInfo = ServerInfo & { pid: number; apiKey: string; providerPhoneNumberId: string; displayPhoneNumber: string };
const target = (entry: LoginInfo, stream: LoginInfo = entry): LoginTarget => ({
  entryUrl: entry.url,
  streamUrl: stream.url,
  apiKey: entry.apiKey,
  providerPhoneNumberId: entry.providerPhoneNumberId,
  displayPhoneNumber: entry.displayPhoneNumber,
  appSecret: APP_SECRET,
});
if (wanted('login')) {
  const login = await startChild<LoginInfo>('login.ts', { SEED: '1', PROVIDER_APP_SECRET: APP_SECRET });
  try {
    const push = await measureLoginPush(target(login.info), quick ? 200 : 1000, loginWarmup, rounds);
    ratios.login_push_p99_budget = 10 / push.p99;
    figures.login_push = push;
    const memory = await measureStreamMemory(target(login.info), login.info.pid, quick ? 2000 : 10_000);
    ratios.sse_memory_budget = 2 ** 30 / memory.scaledTo10kBytes;
    figures.sse_memory = memory;
  } finally {
    await login.stop();
  }
}

// The same push across two instances on one PostgreSQL: BENCH_DATABASE_URL names a server where
// the run creates (and drops) a database of its own.
if (adminUrl && wanted('login')) {
  const name = `bench_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const pgUrl = new URL(adminUrl);
  pgUrl.pathname = `/${name}`;
  const env = { DATABASE_URL: pgUrl.toString(), PROVIDER_APP_SECRET: APP_SECRET, SECRET_KEY: 'bench-secret-key-shared-by-both-instances-0123' };
  const a = await startChild<LoginInfo>('login.ts', { ...env, SEED: '1' });
  const b = await startChild<LoginInfo>('login.ts', env);
  try {
    const push = await measureLoginPush(target(a.info, b.info), quick ? 200 : 1000, loginWarmup, rounds);
    ratios.login_push_two_instances_p99_budget = 50 / push.p99;
    figures.login_push_two_instances = push;
    // Stream memory again on the stream instance, whose RSS holds no embedded database: PGlite's
    // WebAssembly memory (about 650 MB) grows and shrinks on its own and can hide the streams.
    const memory = await measureStreamMemory(target(a.info, b.info), b.info.pid, quick ? 2000 : 10_000);
    ratios.sse_memory_budget_postgres = 2 ** 30 / memory.scaledTo10kBytes;
    figures.sse_memory_postgres = memory;
  } finally {
    await a.stop();
    await b.stop();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
} else if (wanted('login')) {
  console.log('note: set BENCH_DATABASE_URL to measure the push across two instances on PostgreSQL');
}

// A campaign against the fake Cloud API: achieved send rate over the configured 1,000/s, and memory.
if (wanted('campaign')) {
  const recipients = quick ? 10_000 : 100_000;
  const pglite = await measureCampaign(recipients, 1000);
  ratios.campaign_rate_pglite = pglite.achievedPerSecond / pglite.configuredPerSecond;
  figures.campaign_pglite = pglite;
  console.log(`note: campaign_pglite busiest second ${pglite.maxSendsInAnySecond} sends (configured ${pglite.configuredPerSecond})`);
  if (adminUrl) {
    const postgres = await withBenchDatabase(adminUrl, (url) => measureCampaign(recipients, 1000, { DATABASE_URL: url }));
    ratios.campaign_rate_postgres = postgres.achievedPerSecond / postgres.configuredPerSecond;
    figures.campaign_postgres = postgres;
    console.log(`note: campaign_postgres busiest second ${postgres.maxSendsInAnySecond} sends (configured ${postgres.configuredPerSecond})`);
  }
}

// Signed deliveries per second from the outbox to a local receiver, against 2,000/s.
if (wanted('webhooks')) {
  const deliveries = await measureWebhookDeliveries(quick ? 2000 : 10_000, quick ? 3 : 5);
  ratios.webhook_deliveries_budget = deliveries.perSecond / 2000;
  figures.webhook_deliveries = deliveries;
}

// Signed provider deliveries accepted and durably stored per second from one client address,
// against 1,000/s. The figure counts only if none was answered 429 and none was lost (messages
// stored once the inbox drained vs sent); the processing rate and drain time print beside it.
// With BENCH_DATABASE_URL, the same on PostgreSQL (provider_webhook_ingest_postgres).
if (wanted('provider')) {
  const size = quick ? 2000 : 10_000;
  const runs = quick ? 3 : 5;
  const record = (name: string, ingest: Awaited<ReturnType<typeof measureProviderIngest>>) => {
    const whole = ingest.answers429 === 0 && ingest.lost === 0 && ingest.errors === 0;
    ratios[name] = whole ? ingest.perSecond / 1000 : 0;
    figures[name] = ingest;
    console.log(
      `note: ${name} ${Math.round(ingest.perSecond)} deliveries/s acknowledged; ${ingest.sent} sent, ${ingest.stored} stored, ${ingest.lost} lost, ${ingest.answers429} answers 429, ${ingest.errors} errors`,
    );
    // Not a ratio: processing capacity, so the rate of acknowledgements is not mistaken for it.
    console.log(
      `note: ${name} processing ${Math.round(ingest.processedPerSecond)} deliveries/s from the first sent to the inbox drained; drained ${ingest.drainSeconds.toFixed(1)} s after the last acknowledgement; ${ingest.poison} kept as poison`,
    );
  };
  record('provider_webhook_ingest', await measureProviderIngest(size, runs, APP_SECRET));
  if (adminUrl)
    record(
      'provider_webhook_ingest_postgres',
      await withBenchDatabase(adminUrl, (url) => measureProviderIngest(size, runs, APP_SECRET, { DATABASE_URL: url })),
    );
}

// The inbox's processing rate: a campaign's statuses (20,000, one delivery each) stored at once
// and processed by the server's worker, ÷ 1,000/s; and a LOGIN posted behind that backlog,
// verified within 1 s (1,000 ms ÷ its time to `verified`). On PostgreSQL (BENCH_DATABASE_URL);
// the embedded store's figures print as notes. A lost or poisoned status makes the rate 0.
if (wanted('provider') || only?.includes('inbox')) {
  const backlog = 20_000;
  const inboxRounds = quick ? 2 : 3;
  const report = (name: string, inbox: Awaited<ReturnType<typeof measureProviderInbox>>, asRatio: boolean) => {
    const whole = inbox.lost === 0 && inbox.poison === 0;
    const rate = whole ? inbox.perSecond / 1000 : 0;
    figures[name] = inbox;
    if (asRatio) {
      ratios.provider_inbox_processing = rate;
      ratios.provider_inbox_login_behind_backlog = 1000 / inbox.loginMs;
    }
    console.log(
      `note: ${name} ${Math.round(inbox.perSecond)} deliveries/s over a backlog of ${backlog} statuses (${inbox.runs.map((r) => `${r.status} ${r.seconds.toFixed(1)} s`).join(', ')}); ${inbox.lost} lost, ${inbox.poison} poison; LOGIN behind it verified in ${inbox.loginMs.toFixed(0)} ms (max ${inbox.loginMaxMs.toFixed(0)})${asRatio ? '' : ` (ratio ${rate.toFixed(3)})`}`,
    );
  };
  if (adminUrl)
    report(
      'provider_inbox_postgres',
      await withBenchDatabase(adminUrl, (url) => measureProviderInbox(backlog, inboxRounds, APP_SECRET, { DATABASE_URL: url })),
      true,
    );
  else console.log('note: set BENCH_DATABASE_URL for provider_inbox_processing (PostgreSQL)');
  report('provider_inbox_pglite', await measureProviderInbox(backlog, inboxRounds, APP_SECRET), false);
}

// Operations: overload (3× capacity), the metrics' cost on get/post/list, tracing's cost per request.
// `--only=overload`: the overload figures alone.
if (wanted('ops') || only?.includes('overload')) {
  const overload = await measureOverload(quick);
  ratios.overload_goodput = overload.admittedRps / overload.capacityRps;
  ratios.overload_p99_budget = 250 / overload.admittedP99Ms;
  ratios.overload_goodput_per_cpu = overload.admittedRps / overload.overloadCpu / (overload.capacityRps / overload.capacityCpu);
  figures.overload = overload;
  console.log(
    `note: overload capacity ${overload.capacityRps.toFixed(0)} rps, offered ${overload.offeredRps}, admitted ${overload.admittedRps.toFixed(0)}/s (p50 ${overload.admittedP50Ms} ms, p99 ${overload.admittedP99Ms} ms), refused 503 ${overload.refusedRps.toFixed(0)}/s, other ${overload.otherRps.toFixed(0)}/s; recovered to normal latency (p50 ${overload.lightP50Ms.toFixed(1)} ms) ${overload.recoveryMs.toFixed(0)} ms after the load stopped (goal ≤ 5000); the server got ${overload.capacityCpu.toFixed(2)} CPU s/s measuring capacity, ${overload.overloadCpu.toFixed(2)} under overload`,
  );
}
// `--only=metrics`: the metrics' cost alone.
if (wanted('ops') || only?.includes('metrics')) {
  const sized = { connections, durationSec };
  const metrics = await measureMetricsCost(sized, rounds, warmupSec);
  for (const [figure, r] of Object.entries(metrics)) {
    ratios[`metrics_on_vs_off_${figure}`] = r.on / r.off;
    // The same comparison in the server's CPU time per request (off ÷ on), which a shared machine disturbs less.
    ratios[`metrics_on_vs_off_${figure}_cpu`] = r.offCpuUs / r.onCpuUs;
  }
  figures.metrics_cost = metrics;
}
if (wanted('ops')) {
  const sized = { connections, durationSec };
  const tracing = await measureTracingCost(sized, rounds, warmupSec);
  figures.tracing_cost = tracing;
  for (const [figure, r] of Object.entries(tracing))
    console.log(
      `note: tracing on (all sampled, OTLP/HTTP) ${figure}: ${r.on.toFixed(0)} rps vs ${r.off.toFixed(0)} off, ${r.usPerRequest.toFixed(0)} µs per request (wall clock), ${r.cpuUsPerRequest.toFixed(0)} µs of the server's CPU per request`,
    );
}

// `npm run generate` (TypeSpec, both OpenAPI versions, webhooks, types, dereferenced documents) against 15 s.
if (wanted('generate')) {
  const t0 = performance.now();
  const res = spawnSync(process.execPath, ['scripts/generate.mjs'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (res.status !== 0) throw new Error('npm run generate failed');
  const seconds = (performance.now() - t0) / 1000;
  ratios.generate_budget = 15 / seconds;
  figures.generate = { seconds };
}

console.log(machineNote()); // again at the end: the load may have changed during the run
for (const [name, value] of Object.entries(ratios)) console.log(`ratio ${name} ${value.toFixed(3)}`);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/latest.json', import.meta.url),
  JSON.stringify(
    {
      date: new Date().toISOString(),
      quick,
      machine: machine(),
      ratios,
      figures,
    },
    null,
    2,
  ),
);
