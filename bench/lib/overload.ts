// Operations figures: graceful overload (server/ops/overload.ts), the cost of the metrics and the
// cost of tracing, each against our own server as built (bench/servers/full.ts).
//
// Overload: the capacity of the list figure (`GET /api/contacts?limit=20`, 10 connections, the
// rate the server sustains), then three times that rate offered for OVERLOAD_SECONDS from many
// connections. `overload_goodput` = answers 2xx per second ÷ capacity (goal ≥ 0.9);
// `overload_p99_budget` = 250 ms ÷ the p99 of those admitted requests (goal ≥ 1). Then the load
// stops and single requests measure how long until latency is back to normal (p50 at light load ×
// 2, three requests in a row), printed as a note (goal: within 5 s). The CPU the server process got
// in both phases is printed too: on a shared machine it varies, and goodput per CPU second
// (`overload_goodput_per_cpu`) says what the guard controls, how much of the server's work serves
// admitted requests rather than refusals, whatever the other processes take.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { startChild } from './child.js';
import { figureRequest, type HttpFigure, type ServerInfo } from './http-figures.js';
import { compare, load, median, type LoadOptions } from './load.js';

interface OverloadResult {
  capacityRps: number;
  offeredRps: number;
  admittedRps: number;
  refusedRps: number;
  otherRps: number;
  admittedP50Ms: number;
  admittedP99Ms: number;
  lightP50Ms: number;
  recoveryMs: number;
  /** CPU seconds per second the server process got while measuring capacity, and under overload. */
  capacityCpu: number;
  overloadCpu: number;
}

/** CPU seconds (user + system) a process has used so far (Linux: /proc/<pid>/stat), or NaN elsewhere. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** One autocannon run at a fixed overall rate; latency of the 2xx answers only. */
async function offered(url: string, headers: Record<string, string>, rate: number, connections: number, durationSec: number) {
  const admitted: number[] = [];
  let refused = 0;
  let other = 0;
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon({ url, headers, connections, duration: durationSec, overallRate: rate, pipelining: 1, timeout: 10 }, (error) =>
      error ? reject(error) : resolve(),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) admitted.push(ms);
      else if (status === 503) refused++;
      else other++;
    });
  });
  admitted.sort((a, b) => a - b);
  const at = (q: number) => admitted[Math.min(admitted.length - 1, Math.floor(q * admitted.length))] ?? Number.POSITIVE_INFINITY;
  return { admittedRps: admitted.length / durationSec, refusedRps: refused / durationSec, otherRps: other / durationSec, p50: at(0.5), p99: at(0.99) };
}

async function single(url: string, headers: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  return performance.now() - t0;
}

export async function measureOverload(quick: boolean, env: Record<string, string> = {}): Promise<OverloadResult> {
  // The guard at its defaults (docs/operations.md); `env` (or OVERLOAD_* in the bench's own
  // environment, which the server inherits) varies them.
  const server = await startChild<ServerInfo>('full.ts', { SEED_CONTACTS: '10000', ...env });
  try {
    const { url, headers = {} } = figureRequest('list', server.info);
    // Capacity: what 10 connections get through, after a warm-up.
    await load({ url, headers, connections: 10, durationSec: quick ? 6 : 10 }); // past the store's maintenance after seeding
    const runs: number[] = [];
    const pid = server.process.pid;
    let cpu0 = cpuSeconds(pid);
    let t0 = performance.now();
    for (let i = 0; i < 3; i++) runs.push((await load({ url, headers, connections: 10, durationSec: quick ? 3 : 5 })).rps);
    const capacityCpu = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
    const capacityRps = median(runs);
    const light: number[] = [];
    for (let i = 0; i < 50; i++) light.push(await single(url, headers));
    const lightP50Ms = median(light);
    const offeredRps = Math.round(capacityRps * 3);
    cpu0 = cpuSeconds(pid);
    t0 = performance.now();
    const run = await offered(url, headers, offeredRps, 400, quick ? 15 : 60);
    const overloadCpu = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
    // Recovery: from the end of the load until three requests in a row are back at normal latency.
    const stopped = performance.now();
    let streak = 0;
    let recoveryMs = Number.POSITIVE_INFINITY;
    while (performance.now() - stopped < 30_000) {
      const ms = await single(url, headers);
      streak = ms <= Math.max(2 * lightP50Ms, 5) ? streak + 1 : 0;
      if (streak === 3) {
        recoveryMs = performance.now() - stopped;
        break;
      }
    }
    return {
      capacityRps,
      offeredRps,
      admittedRps: run.admittedRps,
      refusedRps: run.refusedRps,
      otherRps: run.otherRps,
      admittedP50Ms: run.p50,
      admittedP99Ms: run.p99,
      lightP50Ms,
      recoveryMs,
      capacityCpu,
      overloadCpu,
    };
  } finally {
    await server.stop();
  }
}

/**
 * The server's CPU time per request (Linux /proc) of subject and baseline, over `rounds`
 * alternating runs after a warm-up of each: on a machine shared with other work, the wall-clock
 * rate follows what the other processes take, the CPU a request costs much less so.
 */
async function cpuPerRequest(
  subject: { load: LoadOptions; pid: number | undefined },
  baseline: { load: LoadOptions; pid: number | undefined },
  rounds: number,
  warmupSec: number,
) {
  await load({ ...subject.load, durationSec: warmupSec });
  await load({ ...baseline.load, durationSec: warmupSec });
  const totals = [subject, baseline].map(() => ({ cpu: 0, requests: 0 }));
  for (let i = 0; i < rounds; i++) {
    for (const [j, side] of [subject, baseline].entries()) {
      const before = cpuSeconds(side.pid);
      const r = await load(side.load);
      totals[j]!.cpu += cpuSeconds(side.pid) - before;
      totals[j]!.requests += r.rps * side.load.durationSec;
    }
  }
  const [s, b] = totals.map((t) => (t.cpu / t.requests) * 1e6) as [number, number];
  return { subjectUs: s, baselineUs: b };
}

/**
 * Metrics on (METRICS_PORT) ÷ metrics off, for get, post and list: the cost on the request path
 * (the onResponse hook's histogram). A scrape's own cost (the backlog queries, at most once a
 * second) falls on the scrape interval, not on requests.
 */
export async function measureMetricsCost(sized: { connections: number; durationSec: number }, rounds: number, warmupSec: number) {
  const off = await startChild<ServerInfo>('full.ts', { SEED_CONTACTS: '10000' });
  const on = await startChild<ServerInfo>('full.ts', { SEED_CONTACTS: '10000', METRICS_PORT: '0' });
  try {
    const out: Record<HttpFigure, { on: number; off: number; onCpuUs: number; offCpuUs: number }> = {} as never;
    for (const figure of ['get', 'post', 'list'] as const) {
      const subject = { ...figureRequest(figure, on.info), ...sized };
      const baseline = { ...figureRequest(figure, off.info), ...sized };
      const r = await compare(subject, baseline, rounds, warmupSec);
      const cpu = await cpuPerRequest({ load: subject, pid: on.process.pid }, { load: baseline, pid: off.process.pid }, rounds, warmupSec);
      out[figure] = { on: r.subject.rps, off: r.baseline.rps, onCpuUs: cpu.subjectUs, offCpuUs: cpu.baselineUs };
    }
    return out;
  } finally {
    await Promise.all([off.stop(), on.stop()]);
  }
}

/** A sink for OTLP/HTTP JSON that accepts and drops everything (the cost measured is the server's). */
async function otlpSink() {
  let spans = 0;
  const server = createServer((req, res) => {
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
    });
    req.on('end', () => {
      spans += size > 0 ? 1 : 0;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    batches: () => spans,
    close: () => new Promise((r) => server.close(r)),
  };
}

/** Tracing on (every request sampled, exported over OTLP/HTTP JSON) against off: rps and µs per request. */
export async function measureTracingCost(sized: { connections: number; durationSec: number }, rounds: number, warmupSec: number) {
  const sink = await otlpSink();
  const off = await startChild<ServerInfo>('full.ts', { SEED_CONTACTS: '10000' });
  const on = await startChild<ServerInfo>('full.ts', {
    SEED_CONTACTS: '10000',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: sink.url,
  });
  try {
    const out: Record<string, { on: number; off: number; usPerRequest: number; cpuUsPerRequest: number }> = {};
    for (const figure of ['get', 'list'] as const) {
      const subject = { ...figureRequest(figure, on.info), ...sized };
      const baseline = { ...figureRequest(figure, off.info), ...sized };
      const r = await compare(subject, baseline, rounds, warmupSec);
      const cpu = await cpuPerRequest({ load: subject, pid: on.process.pid }, { load: baseline, pid: off.process.pid }, rounds, warmupSec);
      out[figure] = {
        on: r.subject.rps,
        off: r.baseline.rps,
        usPerRequest: (1 / r.subject.rps - 1 / r.baseline.rps) * 1e6,
        cpuUsPerRequest: cpu.subjectUs - cpu.baselineUs,
      };
    }
    if (!sink.batches()) throw new Error('tracing on, yet no span reached the OTLP sink');
    return out;
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    await sink.close();
  }
}
