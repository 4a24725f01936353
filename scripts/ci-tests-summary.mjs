#!/usr/bin/env node
// The closing line of .ci/run: the tests of every vitest run in CI added up from the JSON reports
// each run wrote to TEST_REPORT_DIR (vitest.config.ts), printed as `tests: N passed, N failed,
// N skipped` alone on the last line. Exits 1 when there is no report or no test ran, so a CI that
// silently ran nothing fails.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? process.env.TEST_REPORT_DIR;
if (!dir) {
  console.error('usage: ci-tests-summary.mjs <TEST_REPORT_DIR>');
  process.exit(2);
}
const files = readdirSync(dir).filter((name) => name.endsWith('.json'));
const total = { runs: 0, passed: 0, failed: 0, skipped: 0 };
for (const name of files) {
  const report = JSON.parse(readFileSync(join(dir, name), 'utf8'));
  total.runs += 1;
  total.passed += report.numPassedTests;
  total.failed += report.numFailedTests;
  total.skipped += report.numPendingTests + report.numTodoTests;
}
console.log(`vitest runs: ${total.runs}`);
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.runs > 0 && total.passed > 0 && total.failed === 0 ? 0 : 1);
