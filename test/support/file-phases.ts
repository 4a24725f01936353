// A setup file of every project (vitest.config.ts): with TEST_PHASES_DIR set, records each test
// file's wall time and the CPU time its worker spent on it (./phases.ts).
import { afterAll, beforeAll, expect } from 'vitest';
import { record } from './phases.js';

if (process.env.TEST_PHASES_DIR) {
  let wall = 0;
  let cpu: NodeJS.CpuUsage;
  beforeAll(() => {
    wall = performance.now();
    cpu = process.cpuUsage();
  });
  afterAll(() => {
    const used = process.cpuUsage(cpu);
    const file = expect.getState().testPath?.replace(`${process.cwd()}/`, '');
    record('file', performance.now() - wall, { file, cpu: Math.round((used.user + used.system) / 1000) });
  });
}
