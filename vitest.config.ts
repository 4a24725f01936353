import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 20_000, hookTimeout: 60_000 } },
      {
        test: {
          name: 'contract',
          include: ['test/contract/**/*.test.ts'],
          globalSetup: ['test/contract/setup.ts'],
          testTimeout: 20_000,
          hookTimeout: 90_000,
        },
      },
      {
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
        // The generated Python and Go clients' smoke programs against the real server; not part
        // of `npm test`, run with `npm run test:smoke` (generates the clients first if missing).
        test: { name: 'smoke', include: ['test/smoke/**/*.smoke.test.ts'], testTimeout: 120_000, hookTimeout: 600_000 },
      },
    ],
  },
});
