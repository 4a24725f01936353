// `npm run bench` / `npm run bench:quick`: prints `ratio <name> <value>` per figure (higher is
// better, 1.0 = parity with the baseline or the goal) and writes raw figures to
// bench/results/latest.json. Servers run as child processes; load comes from this process.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { startChild } from './lib/child.js';
import { compare } from './lib/load.js';

const quick = process.argv.includes('--quick');
const rounds = quick ? 3 : 5;
const durationSec = quick ? 4 : 10;
const warmupSec = quick ? 2 : 5;
const connections = 10;

type Info = { url: string; token: string };
const figures: Record<string, unknown> = {};
const ratios: Record<string, number> = {};

const full = await startChild<Info>('full.ts');
const bare = await startChild<Info>('bare.ts');
try {
  const get = await compare(
    { url: `${full.info.url}/api/account/me`, headers: { authorization: `Bearer ${full.info.token}` }, connections, durationSec },
    { url: `${bare.info.url}/api/account/me`, connections, durationSec },
    rounds,
    warmupSec,
  );
  ratios.get_vs_bare_fastify = get.subject.rps / get.baseline.rps;
  figures.get_vs_bare_fastify = get;
} finally {
  await full.stop();
  await bare.stop();
}

for (const [name, value] of Object.entries(ratios)) console.log(`ratio ${name} ${value.toFixed(3)}`);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/latest.json', import.meta.url),
  JSON.stringify(
    { date: new Date().toISOString(), quick, machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version }, ratios, figures },
    null,
    2,
  ),
);
