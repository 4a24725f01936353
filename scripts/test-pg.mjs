#!/usr/bin/env node
// `npm run test:pg`: the suites that exercise SQL, races and the bus (vitest.config.ts, project
// `pg`) on PostgreSQL; the contract suite against the server only (the mocks have no database).
// Uses DATABASE_URL when set, else the local server at
// postgres://postgres:postgres@127.0.0.1:5432/postgres (what .ci/run starts). Each test file gets
// its own database, created from a migrated template (test/support/store.ts) and dropped after.
import { spawnSync } from 'node:child_process';

const url = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const args = process.argv.slice(2);
const result = spawnSync('npx', ['vitest', 'run', ...(args.length ? args : ['--project', 'pg'])], {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: url, CONTRACT_TARGETS: process.env.CONTRACT_TARGETS ?? 'server' },
});
process.exit(result.status ?? 1);
