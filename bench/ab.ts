// `npm run bench:ab -- --base <checkout> [--figure get|post|list] [--rounds 4] [--seconds 4]`:
// one change measured against the code before it, in one run. `--base` is another checkout of
// this repository with its own node_modules (`git worktree add ../before HEAD~1 && (cd ../before
// && npm ci)`). Three servers run side by side, the base's full server, this checkout's and bare
// Fastify (this checkout's, as in `npm run bench`), and the load alternates between them after a
// warm-up of each, so a slow minute of the machine falls on all three. Prints each median and
// `ratio ab_<figure>_new_vs_base` (1.0 = no change; higher is better). The requests are those of
// `npm run bench` (bench/lib/http-figures.ts); `list` first fills each store with 8 s of posts
// and runs no bare server.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startChild } from './lib/child.js';
import { machineNote } from './lib/machine.js';
import { buildDist } from './servers/dist.js';
import { figureRequest, type HttpFigure, type ServerInfo } from './lib/http-figures.js';
import { load, median, type LoadOptions } from './lib/load.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    figure: { type: 'string', default: 'get' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '4' },
  },
});
const figure = values.figure as HttpFigure;
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const base = values.base ? resolve(values.base) : undefined;
if (!base || !existsSync(join(base, 'bench/servers/full.ts')) || !existsSync(join(base, 'node_modules/tsx'))) {
  console.error('--base must name another checkout of this repository with its node_modules installed');
  process.exit(2);
}
if (!['get', 'post', 'list'].includes(figure) || !Number.isInteger(rounds) || rounds < 1 || !(seconds >= 1 && seconds <= 60)) {
  console.error('--figure is get, post or list; --rounds a whole number ≥ 1; --seconds from 1 to 60');
  process.exit(2);
}
delete process.env.DATABASE_URL; // every server on its own embedded store, as in bench/run.ts
// Both checkouts' compiled servers (bench/servers/dist.ts), built when their sources changed.
buildDist(base);
buildDist();

const servers = {
  base: await startChild<ServerInfo>('full.ts', {}, base),
  new: await startChild<ServerInfo>('full.ts'),
  ...(figure === 'list' ? {} : { bare: await startChild<ServerInfo>('bare.ts') }),
};
const target = (name: string, server: ServerInfo, durationSec: number): LoadOptions => ({
  // Bare Fastify gets the new server's credentials: the same request bytes (bench/lib/http-figures.ts).
  ...figureRequest(figure, name === 'bare' ? { ...server, token: servers.new.info.token, apiKey: servers.new.info.apiKey } : server),
  connections: 10,
  durationSec,
});

try {
  const entries = Object.entries(servers);
  if (figure === 'list') for (const [, s] of entries) await load({ ...figureRequest('post', s.info), connections: 10, durationSec: 8 });
  for (const [name, s] of entries) await load(target(name, s.info, 2));
  const rps: Record<string, number[]> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [name, s] of i % 2 ? [...entries].reverse() : entries) {
      const r = await load(target(name, s.info, seconds));
      if (r.errors || r.non2xx) throw new Error(`${name}: ${r.errors} errors and ${r.non2xx} non-2xx answers`);
      (rps[name] ??= []).push(Math.round(r.rps));
    }
  }
  console.log(machineNote());
  for (const [name, runs] of Object.entries(rps)) console.log(`${figure} ${name} median ${median(runs)} rps (runs ${runs.join(', ')})`);
  if (rps.bare)
    console.log(`note: vs bare Fastify, base ${(median(rps.base!) / median(rps.bare)).toFixed(3)}, new ${(median(rps.new!) / median(rps.bare)).toFixed(3)}`);
  console.log(`ratio ab_${figure}_new_vs_base ${(median(rps.new!) / median(rps.base!)).toFixed(3)}`);
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
}
