// `DATABASE_URL=postgres://…/<db> npx tsx bench/bulk-io.ts [--import-rows 200000] [--no-export] [--root <checkout>]`:
// the exports and the import of `npm run bench:scale` alone, on a database that `npm run
// seed:scale` filled (its owner read from bench/results/scale-<db>.json). Starts the server
// (bench/servers/scale.ts), then times the contacts CSV export, the busy document's sessions CSV
// and a CSV import of new contacts (rows per second, the server's RSS before and at its peak,
// sampled every 50 ms), and prints one line per figure. The imported contacts stay in the database.
import { readFileSync } from 'node:fs';
import { startChild } from './lib/child.js';
import { newContactsCsv, startContactImport } from './lib/contact-import.js';
import { rssBytes } from './lib/sse-memory.js';
import { flag, infoPath, type ScaleInfo } from './seed-scale.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL names a database that npm run seed:scale filled');
const info = JSON.parse(readFileSync(infoPath(url), 'utf8')) as ScaleInfo;
const importRows = flag('import-rows', 20_000);
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

type Info = { url: string; pid: number; key: string; bearer: string };
// --root <checkout>: that checkout's server instead (the code before a change, for a comparison).
const root = process.argv.includes('--root') ? process.argv[process.argv.indexOf('--root') + 1] : undefined;
const server = await startChild<Info>('scale.ts', { DATABASE_URL: url, SCALE_EMAIL: info.email }, root);
const s = server.info;

async function withRss<T>(fn: () => Promise<T>): Promise<{ result: T; before: number; peak: number }> {
  const before = rssBytes(s.pid);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssBytes(s.pid))), 50);
  try {
    const result = await fn();
    return { result, before, peak: Math.max(peak, rssBytes(s.pid)) };
  } finally {
    clearInterval(timer);
  }
}

async function csv(name: string, path: string, auth: Record<string, string>) {
  const { result, before, peak } = await withRss(async () => {
    const t0 = performance.now();
    const res = await fetch(`${s.url}${path}`, { headers: auth });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    let lines = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) for (const b of chunk) if (b === 10) lines++;
    return { rows: lines - 1, seconds: (performance.now() - t0) / 1000 };
  });
  console.log(
    `${name}: ${result.rows} rows in ${result.seconds.toFixed(2)} s, ${Math.round(result.rows / result.seconds)} rows/s, RSS ${mib(before)} → ${mib(peak)}`,
  );
}

try {
  if (!process.argv.includes('--no-export')) {
    await csv('contacts CSV export', '/api/contacts/export', { 'x-api-key': s.key });
    await csv('document sessions CSV', `/api/connect/documents/${info.busyDocumentId}/sessions.csv`, { authorization: `Bearer ${s.bearer}` });
  }
  if (importRows > 0) {
    const file = newContactsCsv(importRows);
    const { result, before, peak } = await withRss(async () => {
      const t0 = performance.now();
      const job = { id: await startContactImport(s.url, s.key, file) };
      const accepted = performance.now() - t0;
      let checked = 0;
      for (;;) {
        const j = (await (await fetch(`${s.url}/api/contacts/imports/${job.id}`, { headers: { 'x-api-key': s.key } })).json()) as { status: string };
        if (j.status === 'failed') throw new Error(`import failed: ${JSON.stringify(j)}`);
        if (j.status !== 'validating' && !checked) checked = performance.now() - t0;
        if (j.status === 'completed') {
          console.log(`  answered 202 after ${(accepted / 1000).toFixed(2)} s, rows checked after ${(checked / 1000).toFixed(2)} s`);
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return (performance.now() - t0) / 1000;
    });
    console.log(
      `contacts CSV import: ${importRows} rows (${mib(file.length)}) in ${result.toFixed(2)} s, ${Math.round(importRows / result)} rows/s, RSS ${mib(before)} → ${mib(peak)}`,
    );
  }
} finally {
  await server.stop();
}
