// `npm run bench:profile -- [--figure get|post|list] [--bare] [--postgres] [--seconds 10] [--top 40] [--json file]`: where our
// server spends its CPU under one figure's load. Starts the whole server (bench/servers/full.ts,
// or with `--bare` the bare Fastify baseline, to compare the two profiles line by line) with
// `--cpu-prof`, runs the figure's requests after a warm-up, and prints the CPU time per request
// (µs) by function (self time) and by package or server folder (self time summed), so the cost of
// each part of the pipeline can be read in µs per request.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startChild } from './lib/child.js';
import { machineNote } from './lib/machine.js';
import { buildDist } from './servers/dist.js';
import { figureRequest, type HttpFigure, type ServerInfo } from './lib/http-figures.js';
import { load } from './lib/load.js';
import { createBenchDatabase } from './lib/campaign.js';

const { values } = parseArgs({
  options: {
    figure: { type: 'string', default: 'get' },
    bare: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '40' },
    json: { type: 'string' },
  },
});
const figure = values.figure as HttpFigure;
const dir = '/tmp/prof';
rmSync(dir, { recursive: true, force: true });
delete process.env.DATABASE_URL;
process.env.BENCH_PROF = '1';
buildDist();
const bare = values.bare;
// `--postgres`: on a database of its own on BENCH_DATABASE_URL (dropped afterwards), as the `_postgres` figures.
const adminUrl = process.env.BENCH_DATABASE_URL;
if (values.postgres && !adminUrl) throw new Error('--postgres needs BENCH_DATABASE_URL');
const database = values.postgres && adminUrl ? await createBenchDatabase(adminUrl) : undefined;
const full = await startChild<ServerInfo>(bare ? 'bare.ts' : 'full.ts', {
  SEED_CONTACTS: figure === 'list' ? '10000' : '0',
  ...(database ? { DATABASE_URL: database.url } : {}),
});
let requests = 0;
try {
  await load({ ...figureRequest(figure, full.info), connections: 10, durationSec: 3 });
  const r = await load({ ...figureRequest(figure, full.info), connections: 10, durationSec: Number(values.seconds) });
  requests = r.rps * Number(values.seconds);
  console.log(machineNote());
  console.log(`${figure}: ${Math.round(r.rps)} rps, p99 ${r.p99} ms`);
} finally {
  await full.stop();
  await database?.drop();
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number };
// The profile covers start-up and warm-up too: count only the measured window's samples (the last ones).
const self = new Map<number, number>();
let t = profile.startTime;
const times = profile.timeDeltas.map((d) => (t += d));
const end = times.at(-1)!;
const from = end - Number(values.seconds) * 1e6;
profile.samples.forEach((id, i) => {
  if (times[i]! >= from) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
});
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const where = (url: string) => {
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (m) return m[1]!;
  const s = url.match(/\/(server\/[^/]+(?:\/[^/]+)?)\//);
  if (s) return s[1]!;
  return url ? (url.startsWith('node:') ? 'node' : url.replace(/^.*\//, '')) : '(native / gc / idle)';
};
const label = (id: number) => {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  return `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(server|bench)\//, '$1/')}:${lineNumber + 1}`;
};
const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
for (const [id, us] of self) {
  const { url } = byId.get(id)!.callFrame;
  const name = label(id);
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  byPlace.set(where(url), (byPlace.get(where(url)) ?? 0) + us);
}
// Inclusive time (the function and what it calls) of our own code and the Fastify plugins, each
// function counted once per stack (recursion is not counted twice).
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const ours = (id: number) => /\/server\/|@fastify\/|\/fastify\/lib\/(hooks|reply|route|handle-request)/.test(byId.get(id)!.callFrame.url);
const inclusive = new Map<string, number>();
for (const [id, us] of self) {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    if (!ours(at)) continue;
    const name = label(at);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
}
const perRequest = (us: number) => (us / requests).toFixed(1).padStart(7);
const total = [...self.values()].reduce((a, b) => a + b, 0);
const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, us]) => a + us, 0);
console.log(`CPU per request: ${perRequest(total - idle)} µs busy (${perRequest(idle)} µs idle)`);
console.log('\nµs/request  by package or folder (self time)');
for (const [k, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${perRequest(us)}  ${k}`);
console.log('\nµs/request  by function (self time)');
for (const [k, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${perRequest(us)}  ${k}`);
console.log('\nµs/request  inclusive, our code and the Fastify hooks, reply and plugins');
for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${perRequest(us)}  ${k}`);
// `--json <file>`: the per-request figures, for comparing two profiles (ours and `--bare`).
if (values.json) {
  const perReq = (m: Map<string, number>) => Object.fromEntries([...m].map(([k, us]) => [k, us / requests]));
  writeFileSync(values.json, JSON.stringify({ byPlace: perReq(byPlace), byFunction: perReq(byFunction), inclusive: perReq(inclusive) }, null, 1));
}
