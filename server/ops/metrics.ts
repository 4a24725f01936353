// Prometheus metrics (prom-client) on a port of their own (METRICS_PORT; off when unset), so that
// the public port never serves them: docs/operations.md lists each metric, its labels and its
// normal range. Nothing is installed when the port is unset (no hook, no timer).
//
// Label values come from fixed sets only: the API and operationId of the contract operation
// (or the route's pattern for the few other routes, `unmatched` for 404s), the method, the status
// class, a queue or outcome name. Never a tenant id, a credential, a phone number, a raw URL or any
// other value a client chose: cardinality stays bounded whatever the traffic (tested).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import client from 'prom-client';
import type { Operation } from '../contract.js';
import type { Platform } from '../platform.js';
import { ACTIVITY, type ActivityName } from './activity.js';
import type { RefusalReason } from './overload.js';

/** Bounds of the backlog counts: the gauge says "at least this many" beyond them, and the query stays cheap. */
export const BACKLOG_CAP = 10_000;
/** Backlog queries run at most once a second, however many scrapers. */
const BACKLOG_TTL_MS = 1_000;

export interface Metrics {
  registry: client.Registry;
  /** `http://host:port/metrics` once the app is ready. */
  url?: string;
  /** Counts a request refused by the overload guard (server/ops/overload.ts). */
  overloadRefused(reason: RefusalReason): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present when METRICS_PORT is set. */
    metrics?: Metrics;
  }
}

const statusClass = (code: number) => `${Math.floor(code / 100)}xx`;

export function installMetrics(app: FastifyInstance, platform: Platform): void {
  const { metricsPort, metricsHost } = platform.config.ops;
  if (metricsPort === undefined) return;
  const registry = new client.Registry();
  const registers = [registry];
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });

  const requests = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'Requests by contract operation, method and status class: time from the first byte read to the last written (its _count is the request count).',
    labelNames: ['api', 'operation', 'method', 'status_class'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const rateLimited = new client.Counter({
    name: 'chatapp_rate_limit_refusals_total',
    help: 'Requests refused with 429 by the rate limits.',
    labelNames: ['api'],
    registers,
  });
  const overload = new client.Counter({
    name: 'chatapp_overload_refusals_total',
    help: 'Requests refused with 503 by the overload guard before their body was read, by reason: late (waited too long in a saturated event loop), in_flight (the limit), lag (OVERLOAD_MAX_LAG_MS).',
    labelNames: ['reason'],
    registers,
  });
  // The histogram's child for each route (by its config object), method and status class, made at
  // its first answer: a request then observes without building and hashing its label set.
  type Child = { histogram: { observe(seconds: number): void }; api: string };
  const children = new WeakMap<object, Map<string, Child>>();
  const unrouted: { operation?: Operation } = {};
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions; // a getter that builds an object: read once
    const config = (route.config as { operation?: Operation } | undefined) ?? unrouted;
    let byKey = children.get(config);
    if (byKey === undefined) children.set(config, (byKey = new Map()));
    const code = reply.statusCode;
    const status_class = statusClass(code);
    const key = `${request.method} ${status_class}`;
    let child = byKey.get(key);
    if (child === undefined) {
      const operation = config.operation;
      const api = operation?.api ?? 'none';
      const labels = { api, operation: operation?.operationId ?? route.url ?? 'unmatched', method: request.method, status_class };
      child = { histogram: requests.labels(labels), api };
      byKey.set(key, child);
    }
    child.histogram.observe(reply.elapsedTime / 1000);
    if (code === 429) rateLimited.inc({ api: child.api });
    done();
  });

  for (const [name, outcomes] of Object.entries(ACTIVITY) as [ActivityName, readonly string[]][]) {
    new client.Counter({
      name: `chatapp_${name}_total`,
      help: name === 'webhook_attempts' ? 'Webhook delivery attempts by outcome (failed: given up for good).' : 'Campaign recipients handled, by outcome.',
      labelNames: ['outcome'],
      registers,
      collect() {
        this.reset();
        for (const outcome of outcomes) this.inc({ outcome }, platform.activity.total(name, outcome as never));
      },
    });
  }

  const backlog = backlogReader(platform);
  new client.Gauge({
    name: 'chatapp_backlog_items',
    help: `Items due and not yet processed, by queue (counted up to ${BACKLOG_CAP}).`,
    labelNames: ['queue'],
    registers,
    async collect() {
      this.reset();
      for (const row of await backlog()) this.set({ queue: row.queue }, row.items);
    },
  });
  new client.Gauge({
    name: 'chatapp_backlog_oldest_age_seconds',
    help: 'How long the oldest due item of each queue has waited (0 when none is due).',
    labelNames: ['queue'],
    registers,
    async collect() {
      this.reset();
      for (const row of await backlog()) this.set({ queue: row.queue }, row.ageSeconds);
    },
  });
  const poolStats = platform.store.poolStats;
  if (poolStats) {
    new client.Gauge({
      name: 'chatapp_db_pool_connections',
      help: 'PostgreSQL pool: connections in use and the pool size.',
      labelNames: ['state'],
      registers,
      collect() {
        const stats = poolStats();
        this.set({ state: 'in_use' }, stats.inUse);
        this.set({ state: 'max' }, stats.max);
      },
    });
    new client.Gauge({
      name: 'chatapp_db_pool_waiting',
      help: 'PostgreSQL pool: queries waiting for a connection.',
      registers,
      collect() {
        this.set(poolStats().waiting);
      },
    });
  }
  new client.Gauge({
    name: 'chatapp_sse_streams_open',
    help: 'Event streams (Login session events) held open by this instance.',
    registers,
    collect() {
      this.set(app.hasDecorator('loginStreams') ? app.loginStreams.count() : 0);
    },
  });
  new client.Gauge({
    name: 'chatapp_overload_limit',
    help: 'Requests in flight beyond which the overload guard refuses bulk traffic now (OVERLOAD_MAX_IN_FLIGHT, lower while saturated).',
    registers,
    collect() {
      if (app.overload) this.set(app.overload.limit());
    },
  });
  new client.Gauge({
    name: 'chatapp_requests_in_flight',
    help: 'Requests admitted by the overload guard and not yet answered (event streams not counted).',
    registers,
    collect() {
      if (app.overload) this.set(app.overload.inFlight());
    },
  });
  new client.Gauge({
    name: 'chatapp_ready',
    help: 'Whether /readyz would answer 200 (1) or 503 (0).',
    registers,
    async collect() {
      this.set((await platform.readiness.report()).ready ? 1 : 0);
    },
  });

  const metrics: Metrics = { registry, overloadRefused: (reason) => overload.inc({ reason }) };
  app.decorate('metrics', metrics);
  const server = metricsServer(registry);
  app.addHook('onReady', async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(metricsPort, metricsHost, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    metrics.url = `http://${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${port}/metrics`;
    app.log.info({ url: metrics.url }, 'metrics endpoint listening');
  });
  app.addHook('onClose', async () => {
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
}

function metricsServer(registry: client.Registry): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
}

interface BacklogRow {
  queue: string;
  items: number;
  ageSeconds: number;
}

/**
 * Each queue's due items and the wait of the oldest one, in one round trip; every part reads a
 * partial index (outbox_due, provider_deliveries_due, campaigns_sending with
 * campaign_recipients_due, automation_executions_due, automation_enrolments_due) and counts at
 * most BACKLOG_CAP rows. The database unreachable: no backlog series in that scrape (`chatapp_ready` is 0).
 */
function backlogReader(platform: Platform): () => Promise<BacklogRow[]> {
  let last: { at: number; rows: Promise<BacklogRow[]> } | undefined;
  const read = async (): Promise<BacklogRow[]> => {
    const cap = BACKLOG_CAP;
    const age = (oldest: ReturnType<typeof sql>) => sql`coalesce(extract(epoch from now() - (${oldest}))::float8, 0)`;
    const { rows } = await sql<BacklogRow>`
      select 'webhook_outbox' as queue,
        (select count(*) from (select 1 from outbox where status = 'pending' and next_attempt_at <= now() limit ${cap}) t)::int as items,
        ${age(sql`select min(next_attempt_at) from outbox where status = 'pending' and next_attempt_at <= now()`)} as "ageSeconds"
      union all select 'provider_inbox',
        (select count(*) from (select 1 from provider_deliveries where failed_at is null limit ${cap}) t)::int,
        ${age(sql`select received_at from provider_deliveries where failed_at is null order by seq limit 1`)}
      union all select 'campaign_recipients',
        (select count(*) from (select 1 from campaigns c join campaign_recipients r on r.campaign_id = c.id
          where c.status = 'sending' and r.state in ('queued', 'sending') limit ${cap}) t)::int,
        ${age(sql`select min(started_at) from campaigns c where status = 'sending'
          and exists (select 1 from campaign_recipients r where r.campaign_id = c.id and r.state in ('queued', 'sending'))`)}
      union all select 'automation_waits',
        (select count(*) from (select 1 from automation_executions where status = 'waiting' and fire_at <= now() limit ${cap}) t)::int,
        ${age(sql`select min(fire_at) from automation_executions where status = 'waiting' and fire_at <= now()`)}
      union all select 'automation_sequences',
        (select count(*) from (select 1 from automation_sequence_enrolments where status = 'active' and fire_at <= now() limit ${cap}) t)::int,
        ${age(sql`select min(fire_at) from automation_sequence_enrolments where status = 'active' and fire_at <= now()`)}
    `.execute(platform.store.db);
    return rows.map((row) => ({ queue: row.queue, items: Number(row.items), ageSeconds: Math.max(0, Number(row.ageSeconds)) }));
  };
  return () => {
    const now = Date.now();
    if (!last || now - last.at > BACKLOG_TTL_MS) last = { at: now, rows: read().catch(() => []) };
    return last.rows;
  };
}
