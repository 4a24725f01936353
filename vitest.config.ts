import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Vitest's default is one worker per core minus one: a single worker on a 2-core CI machine,
    // while most of a test file's time is spent waiting (timers, provider timeouts, a store
    // starting). Two workers there keep both cores busy. TEST_WORKERS overrides it.
    maxWorkers: Number(process.env.TEST_WORKERS) || Math.max(2, availableParallelism() - 1),
    // With TEST_REPORT_DIR (set by .ci/run), each run also writes vitest's JSON report there;
    // scripts/ci-tests-summary.mjs adds them up into CI's closing line.
    ...(process.env.TEST_REPORT_DIR
      ? { reporters: ['default', ['json', { outputFile: join(process.env.TEST_REPORT_DIR, `vitest-${Date.now()}-${process.pid}.json`) }]] }
      : {}),
    // With TEST_PHASES_DIR, where each file's time goes (test/support/phases.ts).
    setupFiles: ['test/support/file-phases.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 20_000, hookTimeout: 60_000 } },
      // The bad-input catalogue (../shared/reliability/bad-inputs.md), one file per group.
      { extends: true, test: { name: 'security', include: ['test/security/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 60_000 } },
      {
        extends: true,
        test: {
          name: 'contract',
          include: ['test/contract/**/*.test.ts'],
          globalSetup: ['test/contract/setup.ts'],
          testTimeout: 20_000,
          hookTimeout: 90_000,
        },
      },
      {
        extends: true,
        // Headless Chromium (playwright-core) against a server started by each file; not part of
        // `npm test` (which names unit and contract), run with `npm run test:e2e`.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        // Fault injection and two instances on one PostgreSQL (docs/reliability.md): real server
        // processes killed and cut off from the database. Needs DATABASE_URL; not part of
        // `npm test`, run with `npm run test:faults` (CI runs it on PostgreSQL). One file at a
        // time: each starts its own servers.
        test: { name: 'faults', include: ['test/faults/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 300_000, fileParallelism: false },
      },
      {
        extends: true,
        // The generated Python and Go clients' smoke programs against the real server; not part
        // of `npm test`, run with `npm run test:smoke` (generates the clients first if missing).
        test: { name: 'smoke', include: ['test/smoke/**/*.smoke.test.ts'], testTimeout: 120_000, hookTimeout: 600_000 },
      },
    ],
  },
});
