#!/usr/bin/env node
// `npm run test:pg`: the test suite on PostgreSQL. Uses DATABASE_URL when set, else the local
// server at postgres://postgres:postgres@127.0.0.1:5432/postgres (what .ci/run starts). Each test
// file creates and drops its own database (test/support/store.ts).
import { spawnSync } from 'node:child_process';

const url = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const args = process.argv.slice(2);
const result = spawnSync('npx', ['vitest', 'run', ...(args.length ? args : ['--project', 'unit', '--project', 'security', '--project', 'contract'])], {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: url },
});
process.exit(result.status ?? 1);
