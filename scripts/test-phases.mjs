#!/usr/bin/env node
// Adds up what test/support/phases.ts recorded in TEST_PHASES_DIR: the time spent in store
// start-up, migrations and app builds, each file's waiting (wall less CPU), and the slowest files.
//   TEST_PHASES_DIR=/tmp/phases npm test && node scripts/test-phases.mjs /tmp/phases [N]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? process.env.TEST_PHASES_DIR;
if (!dir) {
  console.error('usage: test-phases.mjs <TEST_PHASES_DIR> [how many files]');
  process.exit(2);
}
const rows = readdirSync(dir)
  .filter((name) => name.endsWith('.jsonl'))
  .flatMap((name) =>
    readFileSync(join(dir, name), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
  );
const seconds = (ms) => (ms / 1000).toFixed(1);
const sum = (list, field = 'ms') => list.reduce((total, row) => total + (row[field] ?? 0), 0);

console.log('| phase | count | total s | mean ms |');
console.log('|---|---:|---:|---:|');
for (const phase of ['store', 'reset', 'migrations', 'build']) {
  const list = rows.filter((row) => row.phase === phase);
  console.log(`| ${phase} | ${list.length} | ${seconds(sum(list))} | ${list.length ? Math.round(sum(list) / list.length) : 0} |`);
}
const files = rows.filter((row) => row.phase === 'file').map((row) => ({ ...row, wait: Math.max(0, row.ms - row.cpu) }));
console.log(`| test files (wall) | ${files.length} | ${seconds(sum(files))} | |`);
console.log(`| of which waiting (wall less CPU) | | ${seconds(sum(files, 'wait'))} | |`);
const top = Number(process.argv[3] ?? 20);
console.log(`\n| the ${top} slowest files | wall s | CPU s | waiting s |`);
console.log('|---|---:|---:|---:|');
for (const row of files.sort((a, b) => b.ms - a.ms).slice(0, top)) {
  console.log(`| ${row.file} | ${seconds(row.ms)} | ${seconds(row.cpu)} | ${seconds(row.wait)} |`);
}
