import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Vitest's default is one worker per core minus one: a single worker on a 2-core CI machine.
    // A quarter of a file's time is still spent waiting (child processes, rates measured in real
    // time, sockets), so one worker more than cores keeps them busy: on 2 cores, 3 workers ran
    // `npm test` in 294 s against 313 s with 2. TEST_WORKERS overrides it.
    maxWorkers: Number(process.env.TEST_WORKERS) || availableParallelism() + 1,
    // With TEST_REPORT_DIR (set by .ci/run), each run also writes vitest's JSON report there;
    // scripts/ci-tests-summary.mjs adds them up into CI's closing line.
    ...(process.env.TEST_REPORT_DIR
      ? { reporters: ['default', ['json', { outputFile: join(process.env.TEST_REPORT_DIR, `vitest-${Date.now()}-${process.pid}.json`) }]] }
      : {}),
    // One worker process runs many files (Vitest's default starts a process per file): the
    // server's modules are imported, PGlite's WebAssembly compiled and the contract's validators
    // and serializers built once per worker instead of once per file. Nothing a file leaves
    // behind may leak into the next: apps and stores are closed after each file (test/setup.ts),
    // and no test changes process.env or module state without restoring it.
    isolate: false,
    // Closes the apps test/helper.ts built; with TEST_PHASES_DIR, records where the time goes.
    setupFiles: ['test/setup.ts'],
    // A test's and a hook's timeout detect a hang; they are not a speed. On a busy 2-core machine
    // (other work beside the suite) a test takes many times what it takes alone: ones that build
    // apps or wait for workers ran past the former 20 s there though they take 2-3 s alone. Tests
    // wait on events (test/support/eventually.ts); the bound says when to give up on one that
    // never comes.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // The bad-input catalogue (../shared/reliability/bad-inputs.md), one file per group.
      { extends: true, test: { name: 'security', include: ['test/security/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'contract',
          include: ['test/contract/**/*.test.ts'],
          globalSetup: ['test/contract/setup.ts'],
        },
      },
      {
        extends: true,
        // `npm run test:pg`: on PostgreSQL, the suites whose SQL, races or bus could behave
        // otherwise than on PGlite: the store, the outbox and the bus, accounts, everything with two
        // instances or concurrent writers (every file that branches on onPostgres is in one of
        // these folders), the bad-input catalogue (tenant isolation, races, limits), and the
        // contract suite against the server, which runs every operation's SQL. Pure unit tests
        // (clients, documents, pages, parsers) are not run a second time.
        test: {
          name: 'pg',
          include: [
            'test/unit/store/**/*.test.ts',
            'test/unit/ops/**/*.test.ts',
            'test/unit/outbox/**/*.test.ts',
            'test/unit/events/**/*.test.ts',
            'test/unit/webhooks/**/*.test.ts',
            'test/unit/account/**/*.test.ts',
            'test/unit/providers/sandbox.test.ts',
            'test/unit/login/**/*.test.ts',
            'test/unit/connect/**/*.test.ts',
            'test/unit/messaging/**/*.test.ts',
            'test/security/**/*.test.ts',
            'test/contract/**/*.test.ts',
          ],
          globalSetup: ['test/contract/setup.ts'],
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
        // `npm run test:fleet`: HAProxy in front of three server processes on one PostgreSQL,
        // Redis and an S3-compatible server, under a mixed load with kill -9 and rolling restarts
        // (test/fleet/). Needs DATABASE_URL, redis-server, haproxy and STORAGE_TEST_S3.
        test: { name: 'fleet', include: ['test/fleet/**/*.test.ts'], testTimeout: 600_000, hookTimeout: 300_000, fileParallelism: false },
      },
      {
        extends: true,
        // A real Prometheus scraping a server on PostgreSQL (`npm run test:prometheus`, DATABASE_URL).
        test: { name: 'prometheus', include: ['test/prometheus/**/*.test.ts'], testTimeout: 180_000, hookTimeout: 300_000 },
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
