// `npx tsx bench/cpu.ts [--figures get,list,post] [--rounds 3] [--seconds 4]`: the CPU time each
// request costs our server and bare Fastify (the `*_vs_bare_fastify` figures' servers and
// requests), read from the kernel's accounting of each server process (/proc/<pid>/stat), and
// its ratio bare ÷ ours. On a machine shared with other work, requests per second measure the
// share of the processor each server got as much as its code; CPU time per request stays close
// to what the code costs, so a change to the pipeline can be read on a busy machine too (the
// ratio is what the throughput ratio would be on an idle machine where each server has a core).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startChild } from './lib/child.js';
import { figureRequest, type HttpFigure, type ServerInfo } from './lib/http-figures.js';
import { load, median } from './lib/load.js';
import { machineNote } from './lib/machine.js';
import { buildDist } from './servers/dist.js';

const { values } = parseArgs({
  options: { figures: { type: 'string', default: 'get,list,post' }, rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '4' } },
});
const figures = values.figures.split(',') as HttpFigure[];
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const TICK_US = 1e6 / 100; // USER_HZ: /proc counts CPU time in 1/100 s

/** User and system CPU time of a process so far (or of one of its threads, `/task/<tid>`), in µs. */
function cpuUs(pid: number, thread = ''): number {
  const fields = readFileSync(`/proc/${pid}${thread}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}
/** The process's CPU time and its main thread's: the rest is V8's and libuv's helper threads (GC, compilation). */
const cpuOf = (pid: number) => ({ all: cpuUs(pid), main: cpuUs(pid, `/task/${pid}`) });

delete process.env.DATABASE_URL;
buildDist();
const seed = { SEED_CONTACTS: '10000' };
const full = await startChild<ServerInfo>('full.ts', seed);
const bare = await startChild<ServerInfo>('bare.ts', seed);
console.log(machineNote());
try {
  for (const figure of figures) {
    const servers = {
      ours: { child: full, request: figureRequest(figure, full.info) },
      bare: { child: bare, request: figureRequest(figure, { ...bare.info, token: full.info.token, apiKey: full.info.apiKey }) },
    };
    const us: Record<string, number[]> = { ours: [], bare: [] };
    const helpers: Record<string, number[]> = { ours: [], bare: [] };
    for (const { request } of Object.values(servers)) await load({ ...request, connections: 10, durationSec: 2 }); // warm-up
    for (let round = 0; round < rounds; round++) {
      for (const [name, { child, request }] of Object.entries(servers)) {
        const before = cpuOf(child.process.pid!);
        const r = await load({ ...request, connections: 10, durationSec: seconds });
        if (r.non2xx || r.errors) throw new Error(`${figure} ${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        const after = cpuOf(child.process.pid!);
        us[name]!.push((after.all - before.all) / (r.rps * seconds));
        helpers[name]!.push((after.all - after.main - (before.all - before.main)) / (r.rps * seconds));
      }
    }
    const [ours, base] = [median(us.ours!), median(us.bare!)];
    console.log(
      `${figure}: CPU per request ours ${ours.toFixed(0)} µs, bare ${base.toFixed(0)} µs (ours ${us.ours!.map((n) => n.toFixed(0)).join(', ')}; bare ${us.bare!.map((n) => n.toFixed(0)).join(', ')})`,
    );
    // Garbage collection and compilation partly run beside the main thread: a profile of the main
    // thread (bench:profile) does not see this part of a server's CPU time.
    console.log(
      `note: ${figure} CPU per request on helper threads (GC, compilation) ours ${median(helpers.ours!).toFixed(0)} µs, bare ${median(helpers.bare!).toFixed(0)} µs`,
    );
    console.log(`ratio cpu_${figure}_bare_vs_ours ${(base / ours).toFixed(3)}`);
  }
} finally {
  await full.stop();
  await bare.stop();
}
console.log(machineNote());
