// `npx tsx bench/contact-import.ts [--rows N]`: imports a CSV of N contacts (100,000 by default)
// through POST /api/contacts/imports on the embedded store (PGlite in a temporary DATA_DIR), the
// way a production server without DATABASE_URL runs, and reports the time from upload to the
// job's `completed` (and its parts: the upload's answer, checking every row, writing them), and
// the process's resident memory before the upload and at its peak (sampled every 20 ms, and the
// kernel's lifetime maximum). The file has names, emails, two tags from four, a custom field, an
// opt-out column and 2% repeated numbers (merged), in mixed number layouts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' } } });
const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows < 1 || rows > 200_000) {
  console.error('--rows must be an integer from 1 to 200000');
  process.exit(2);
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-import-'));
const app = await buildApp(
  loadConfig({
    ...process.env,
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    DEMO: 'false',
    SIGNUP: 'open',
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
  }),
);
await app.ready();
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

try {
  const signUp = await app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: { email: 'bench@bench.example', password: 'bench-password-123', name: 'Bench', workspace_name: 'Bench', workspace_slug: 'bench' },
  });
  if (signUp.statusCode !== 201) throw new Error(`sign-up failed: ${signUp.statusCode} ${signUp.body}`);
  const bearer = { authorization: `Bearer ${signUp.json().session.access_token}` };
  const field = await app.inject({ method: 'POST', url: '/api/custom-fields', headers: bearer, payload: { key: 'city', label: 'City', type: 'text' } });
  if (field.statusCode !== 201) throw new Error(`custom field failed: ${field.statusCode}`);

  const tags = ['vip', 'newsletter', 'b2b', 'lead'];
  const cities = ['Berlin', 'Lisboa', 'Madrid', 'Paris', 'München'];
  const lines = ['contact_no,name,email,tags,opted_out,city'];
  for (let i = 0; i < rows; i++) {
    // 2% of the rows repeat an earlier number (merged into it).
    const n = i % 50 === 49 ? i - 7 : i;
    const digits = String(100000000 + n);
    const phone = i % 3 === 0 ? `+49 151 ${digits.slice(0, 4)} ${digits.slice(4)}` : i % 3 === 1 ? `49151${digits}` : `+49-151-${digits}`;
    lines.push(`${phone},Contact ${i},c${i}@example.com,"${tags[i % 4]},${tags[(i + 1) % 4]}",${i % 97 === 0 ? 'true' : ''},${cities[i % 5]}`);
  }
  const csv = Buffer.from(`${lines.join('\r\n')}\r\n`);
  lines.length = 0;
  const boundary = '----contact-import-bench';
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n`),
    csv,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);

  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
  const started = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: '/api/contacts/imports',
    headers: { ...bearer, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
  const acceptedMs = performance.now() - started;
  if (res.statusCode !== 202) throw new Error(`import refused: ${res.statusCode} ${res.body}`);
  const id = res.json().id;
  let job: { status: string; created: number; updated: number; merged: number; error_count: number };
  let importingAt: number | undefined;
  for (;;) {
    job = (await app.inject({ method: 'GET', url: `/api/contacts/imports/${id}`, headers: bearer })).json();
    if (job.status === 'importing' && importingAt === undefined) importingAt = performance.now();
    if (job.status === 'completed' || job.status === 'failed') break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const totalMs = performance.now() - started;
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  const count = await app.platform.store.db
    .selectFrom('contacts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  console.log(
    JSON.stringify({
      rows,
      fileBytes: csv.length,
      status: job.status,
      created: job.created,
      updated: job.updated,
      merged: job.merged,
      errors: job.error_count,
      contactsStored: Number(count.n),
      acceptedMs: Math.round(acceptedMs),
      checkedMs: importingAt === undefined ? null : Math.round(importingAt - started),
      totalMs: Math.round(totalMs),
      rssBeforeMiB: Number(mib(rssBefore)),
      rssPeakMiB: Number(mib(rssPeak)),
      maxRssMiB: Number(mib(process.resourceUsage().maxRSS * 1024)),
    }),
  );
} finally {
  await app.close();
  rmSync(dataDir, { recursive: true, force: true });
}
