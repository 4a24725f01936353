// The setup file of every project (vitest.config.ts), run before each test file: closes the
// apps test/helper.ts built, after each test and after the file, and, with TEST_PHASES_DIR set,
// records the file's wall time and the CPU time its worker spent on it (support/phases.ts).
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { closeFileApps, closeTestApps } from './helper.js';
import { record } from './support/phases.js';

afterEach(closeTestApps);
afterAll(closeFileApps);

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
