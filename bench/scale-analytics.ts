// The analytics reads of `bench:scale` alone, on databases already seeded by `npm run seed:scale`:
//   npx tsx bench/scale-analytics.ts --db postgres://…/small --db postgres://…/large [--runs 15] [--root ../before]
// For each database, in the order given: the server (of this checkout, or of `--root`, another
// checkout with its node_modules, to measure the code before a change) on it, then the p50 of
// link and document analytics and their 90-day daily series of the busy link and document, one
// request at a time after 3 warm-up requests. With two databases it prints
// `ratio scale_<read> <2 × p50(first) ÷ p50(second)>` as bench:scale does.
import { readFileSync } from 'node:fs';
import { startChild } from './lib/child.js';
import { flag, infoPath, type ScaleInfo } from './seed-scale.js';

const dbs = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--db' ? [a] : []));
const rootAt = process.argv.indexOf('--root');
const root = rootAt >= 0 ? process.argv[rootAt + 1] : undefined;
const runs = flag('runs', 15);
if (!dbs.length) throw new Error('--db postgres://…/<seeded database> (one or two)');

type Info = { url: string; bearer: string };
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const figures: Record<string, number>[] = [];
for (const url of dbs) {
  const info = JSON.parse(readFileSync(infoPath(url), 'utf8')) as ScaleInfo;
  const server = await startChild<Info>('scale.ts', { DATABASE_URL: url, SCALE_EMAIL: info.email, START_TIMEOUT_SECONDS: '3600' }, root);
  const reads: Record<string, number> = {};
  try {
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const to = day(new Date());
    const from = day(new Date(Date.now() - 89 * 86_400_000));
    const paths: Record<string, string> = {
      link_analytics: `/api/connect/links/${info.busyLinkId}/analytics`,
      document_analytics: `/api/connect/documents/${info.busyDocumentId}/analytics`,
      link_daily_90: `/api/connect/links/${info.busyLinkId}/analytics/daily?from=${from}&to=${to}`,
      document_daily_90: `/api/connect/documents/${info.busyDocumentId}/analytics/daily?from=${from}&to=${to}`,
    };
    for (const [name, path] of Object.entries(paths)) {
      const times: number[] = [];
      for (let i = 0; i < runs + 3; i++) {
        const started = performance.now();
        const res = await fetch(`${server.info.url}${path}`, { headers: { authorization: `Bearer ${server.info.bearer}` } });
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 300)}`);
        if (i >= 3) times.push(performance.now() - started);
      }
      reads[name] = median(times);
      console.log(`${info.database} (${info.size.sessions} sessions) ${name}: p50 ${reads[name]!.toFixed(1)} ms`);
    }
  } finally {
    await server.stop();
  }
  figures.push(reads);
}
if (figures.length === 2)
  for (const name of Object.keys(figures[0]!)) console.log(`ratio scale_${name} ${((2 * figures[0]![name]!) / figures[1]![name]!).toFixed(3)}`);
