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
    ],
  },
});
