// Load from this process against servers in child processes, on 127.0.0.1 only, bounded in
// requests and time. Each figure is the median of several runs, subject and baseline
// alternating, warm-up excluded.
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A fixed body, or a function giving each request's JSON body (e.g. a new contact each time). */
  body?: string | (() => unknown);
  connections: number;
  durationSec: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(options: LoadOptions): Promise<LoadResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(options.url)) throw new Error('benchmarks only target 127.0.0.1');
  const { body } = options;
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    ...(typeof body === 'function' ? { requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: JSON.stringify(body()) }) }] } : { body }),
    connections: options.connections,
    duration: options.durationSec,
    pipelining: 1,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Runs subject and baseline alternately `rounds` times after one warm-up of each. */
export async function compare(subject: LoadOptions, baseline: LoadOptions, rounds: number, warmupSec: number) {
  await load({ ...subject, durationSec: warmupSec });
  await load({ ...baseline, durationSec: warmupSec });
  const s: LoadResult[] = [];
  const b: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    s.push(await load(subject));
    b.push(await load(baseline));
  }
  for (const r of [...s, ...b]) if (r.errors || r.non2xx) throw new Error(`load run had ${r.errors} errors and ${r.non2xx} non-2xx answers`);
  return {
    subject: { rps: median(s.map((r) => r.rps)), p99: median(s.map((r) => r.p99)), runs: s },
    baseline: { rps: median(b.map((r) => r.rps)), p99: median(b.map((r) => r.p99)), runs: b },
  };
}
