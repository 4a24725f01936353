// The machine a figure was measured on, printed with the figures: the per-request cost of the
// pipeline depends on the processor (the same code gives other ratios on an Intel Xeon than on an
// AMD EPYC), and the load average says how much else was running beside the measurement.
import { cpus, loadavg, totalmem } from 'node:os';

export function machine() {
  const list = cpus();
  return { cpus: list.length, cpu: list[0]?.model, memoryBytes: totalmem(), node: process.version, loadAverage: loadavg().map((n) => Number(n.toFixed(2))) };
}

/** `note: machine <processor model>, <n> cores, Node <version>, load average <1, 5, 15 min>`. */
export function machineNote(): string {
  const m = machine();
  return `note: machine ${m.cpu ?? 'unknown processor'}, ${m.cpus} cores, ${Math.round(m.memoryBytes / 2 ** 30)} GiB, Node ${m.node}, load average ${m.loadAverage.join(' ')}`;
}
