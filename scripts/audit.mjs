// `npm run audit`: `npm audit --omit=dev` must show no high or critical advisory, except those
// written down in audit-exceptions.json with their reason. Where the registry has no advisory
// endpoint (a mirror answering 405, no network), it says so and does not fail: the check cannot
// run there, which is not the same as a clean result.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const exceptions = JSON.parse(readFileSync(new URL('../audit-exceptions.json', import.meta.url), 'utf8'));
const res = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8' });
let report;
try {
  report = JSON.parse(res.stdout);
} catch {
  report = undefined;
}
if (!report || report.error || !report.vulnerabilities) {
  const why = report?.message ?? report?.error?.summary ?? 'no answer';
  console.log(`audit: the registry's advisory endpoint is not available here (${why.trim()}); not checked`);
  process.exit(0);
}
const serious = Object.values(report.vulnerabilities).filter((v) => v.severity === 'high' || v.severity === 'critical');
const unexcused = serious.filter((v) => !exceptions[v.name]);
for (const v of serious)
  console.log(`${exceptions[v.name] ? 'excepted' : 'FAIL'}: ${v.name} (${v.severity})${exceptions[v.name] ? ` — ${exceptions[v.name]}` : ''}`);
console.log(`audit: ${serious.length} high or critical advisories in production dependencies, ${unexcused.length} not excepted`);
process.exit(unexcused.length ? 1 : 0);
