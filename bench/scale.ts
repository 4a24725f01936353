// `npm run bench:scale`: every public list, search, filter, segment, campaign, analytics, import
// and export operation at two sizes of one workspace in one run, on PostgreSQL
// (BENCH_DATABASE_URL names the server; each size gets a database `scale_<size>`, seeded by
// bench/seed-scale.ts when it has not been yet, and kept for the next run unless --fresh).
// Prints `ratio scale_<operation> <value>` per figure (docs/scale.md, bench/README.md):
//   reads:     2 × p50 at the small size ÷ p50 at the large size (goal ≥ 1)
//   imports:   rows per second ÷ 20,000; exports: rows per second ÷ 200,000
//   campaign:  300 ms ÷ the time to the answer of a campaign to ~10% of the large workspace
// Flags: --small 10000 --large 1000000 (sizes in contacts; 3 messages and 1 reader session per
// contact), --runs 15 (timed requests per read), --import-rows 20000, --fresh (seed again).
// One request at a time, against a warm server: each read is requested 3 times first.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { newContactsCsv, startContactImport } from './lib/contact-import.js';
import { startChild } from './lib/child.js';
import { rssBytes } from './lib/sse-memory.js';
import { flag, infoPath, seedDatabase, type ScaleInfo } from './seed-scale.js';

const admin = process.env.BENCH_DATABASE_URL;
if (!admin) throw new Error('BENCH_DATABASE_URL names the PostgreSQL server (postgres://…/postgres)');
delete process.env.DATABASE_URL;
const small = flag('small', 10_000);
const large = flag('large', 1_000_000);
const runs = flag('runs', 15);
const importRows = flag('import-rows', 20_000);
const fresh = process.argv.includes('--fresh');

const label = (n: number) => (n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}m` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
const dbUrl = (name: string) => {
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
};

/** Runs `fn` on a connection to the database at `url`. */
async function withDatabase<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const withAdmin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => withDatabase(admin, fn);

/** The seeded database of `contacts` contacts: reused when its seed finished, else made now. */
async function database(contacts: number): Promise<{ url: string; info: ScaleInfo; seeded: boolean }> {
  const name = `scale_${label(contacts)}`;
  const url = dbUrl(name);
  const exists = await withAdmin(async (c) => (await c.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1);
  if (!fresh && exists && existsSync(infoPath(url))) {
    const info = JSON.parse(readFileSync(infoPath(url), 'utf8')) as ScaleInfo;
    if (info.size.contacts === contacts) return { url, info, seeded: false };
  }
  await withAdmin(async (c) => {
    await c.query(`drop database if exists ${name} with (force)`);
    await c.query(`create database ${name}`);
  });
  console.log(`seeding ${name}: ${contacts} contacts, ${contacts * 3} messages, ${contacts} reader sessions`);
  const info = await seedDatabase(url, { contacts, messages: contacts * 3, sessions: contacts }, (line) => console.log(`  ${line}`));
  return { url, info, seeded: true };
}

type Info = { url: string; pid: number; key: string; bearer: string };
interface Request {
  method?: string;
  path: string;
  body?: unknown;
  connect?: boolean;
}

function headers(s: Info, r: Request): Record<string, string> {
  return {
    ...(r.connect ? { authorization: `Bearer ${s.bearer}` } : { 'x-api-key': s.key }),
    ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}),
  };
}

async function send(s: Info, r: Request): Promise<{ status: number; ms: number; body: any; bytes: number }> {
  const started = performance.now();
  const res = await fetch(`${s.url}${r.path}`, {
    method: r.method ?? 'GET',
    headers: headers(s, r),
    body: r.body === undefined ? undefined : JSON.stringify(r.body),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  let body: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
  return { status: res.status, ms, body, bytes: text.length };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** p50 of `runs` requests after 3 warm-up ones; `make(i)` gives the i-th request (new names for creates). */
async function p50(s: Info, make: (i: number) => Request, expectStatus = 200): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs + 3; i++) {
    const r = await send(s, make(i));
    if (r.status !== expectStatus) throw new Error(`${make(i).path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    if (i >= 3) times.push(r.ms);
  }
  return median(times);
}

/** Peak RSS of `pid` while `fn` runs, sampled every 50 ms. */
async function withRss<T>(pid: number, fn: () => Promise<T>): Promise<{ result: T; before: number; peak: number }> {
  const before = rssBytes(pid);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 50);
  try {
    const result = await fn();
    peak = Math.max(peak, rssBytes(pid));
    return { result, before, peak };
  } finally {
    clearInterval(timer);
  }
}

async function until<T>(check: () => Promise<T | false>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface SizeFigures {
  contacts: number;
  seedSeconds: number | null;
  startSeconds: number;
  reads: Record<string, number>;
  campaign: { audience: number; answerMs: number; status: number; cancelMs: number; preparedMs: number | null };
  exportContacts: { rows: number; seconds: number; rssBefore: number; rssPeak: number };
  exportSessions: { rows: number; seconds: number; rssBefore: number; rssPeak: number };
  importContacts?: { rows: number; seconds: number; rssBefore: number; rssPeak: number };
}

/**
 * Removes what a run added to the seeded workspace (the imported contacts, the segments and the
 * campaign), so that every run of a reused database measures the same data: imported contacts
 * are the newest, and a newest-first filter would read past them on the next run.
 */
async function forgetRun(url: string, workspaceId: string, since: Date): Promise<void> {
  await withDatabase(url, async (c) => {
    for (const table of ['contacts', 'tags', 'segments', 'campaigns', 'contact_imports'])
      await c.query(`delete from ${table} where workspace_id = $1 and created_at >= $2`, [workspaceId, since]);
    await c.query('vacuum (analyze) contacts, contact_tags, segments, campaigns, campaign_recipients');
  });
}

async function measure(contacts: number, doImport: boolean): Promise<SizeFigures> {
  const { url, info, seeded } = await database(contacts);
  const since = await withDatabase(url, async (c) => (await c.query<{ now: Date }>('select now()')).rows[0]!.now);
  const started = performance.now();
  const server = await startChild<Info>('scale.ts', { DATABASE_URL: url, SCALE_EMAIL: info.email, START_TIMEOUT_SECONDS: '3600' });
  const startSeconds = (performance.now() - started) / 1000;
  const s = server.info;
  try {
    const reads: Record<string, number> = {};
    const read = async (name: string, make: (i: number) => Request, status = 200) => {
      reads[name] = await p50(s, make, status);
      console.log(`  ${label(contacts)} ${name}: p50 ${reads[name]!.toFixed(1)} ms`);
    };
    await read('contacts_first_page', () => ({ path: '/api/contacts?limit=20' }));
    // Page 50: the cursor of page 49, found once.
    let cursor = '';
    for (let i = 1; i < 50; i++)
      cursor = (await send(s, { path: `/api/contacts?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}` })).body.next_cursor;
    await read('contacts_page_50', () => ({ path: `/api/contacts?limit=20&cursor=${encodeURIComponent(cursor)}` }));
    await read('contacts_sort_name', () => ({ path: '/api/contacts?limit=20&sort=name' }));
    await read('contacts_sort_name_desc', () => ({ path: '/api/contacts?limit=20&sort=-name' }));
    await read('contacts_sort_last_inbound', () => ({ path: '/api/contacts?limit=20&sort=-last_inbound_at' }));
    await read('contacts_search_no_match', () => ({ path: `/api/contacts?limit=20&q=${encodeURIComponent('zzqxv')}` }));
    await read('contacts_search_name', () => ({ path: `/api/contacts?limit=20&q=${encodeURIComponent('Kowalski')}` }));
    await read('contacts_search_phone', () => ({ path: `/api/contacts?limit=20&q=${encodeURIComponent('151 0000 12')}` }));
    await read('contacts_search_email', () => ({ path: `/api/contacts?limit=20&q=${encodeURIComponent('user4242@')}` }));
    await read('contacts_filter_two_tags', () => ({ path: '/api/contacts?limit=20&tag=vip&tag=berlin' }));
    await read('contacts_filter_custom_field', () => ({ path: '/api/contacts?limit=20&custom_field=city:lyon' }));
    const stamp = Date.now().toString(36);
    await read(
      'segment_create',
      (i) => ({
        method: 'POST',
        path: '/api/segments',
        body: {
          name: `Pro in Lyon ${stamp} ${i}`,
          filter: {
            match: 'all',
            conditions: [
              { field: 'tag', operator: 'eq', value: 'wholesale' },
              { field: 'custom_fields.plan', operator: 'eq', value: 'pro' },
              { field: 'name', operator: 'contains', value: 'an' },
            ],
          },
        },
      }),
      201,
    );
    await read('segments_list', () => ({ path: '/api/segments?limit=20' }));
    const segmentId = (await send(s, { path: '/api/segments?limit=1' })).body.data[0].id;
    await read('segment_preview', () => ({ path: `/api/contacts?limit=20&segment_id=${segmentId}` }));
    await read('chats_list', () => ({ path: '/api/chatapp/chats?limit=20' }));
    const contactId = (await send(s, { path: '/api/chatapp/chats?limit=1' })).body.data[0].contact.id;
    await read('chat_messages', () => ({ path: `/api/chatapp/messages?limit=20&contact_id=${contactId}` }));
    await read('tags_list', () => ({ path: '/api/tags' }));
    await read('campaigns_list', () => ({ path: '/api/campaigns?limit=20' }));
    await read('documents_list', () => ({ path: '/api/connect/documents?limit=20', connect: true }));
    await read('links_list', () => ({ path: '/api/connect/links?limit=20', connect: true }));
    await read('link_sessions', () => ({ path: `/api/connect/links/${info.busyLinkId}/sessions?limit=20`, connect: true }));
    await read('link_analytics', () => ({ path: `/api/connect/links/${info.busyLinkId}/analytics`, connect: true }));
    await read('document_analytics', () => ({ path: `/api/connect/documents/${info.busyDocumentId}/analytics`, connect: true }));
    const to = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10);
    await read('link_daily_90', () => ({ path: `/api/connect/links/${info.busyLinkId}/analytics/daily?from=${from}&to=${to}`, connect: true }));
    await read('document_daily_90', () => ({ path: `/api/connect/documents/${info.busyDocumentId}/analytics/daily?from=${from}&to=${to}`, connect: true }));
    // Erasing a contact (with its chat and messages): the oldest ones, one per request.
    const oldest = (await send(s, { path: `/api/contacts?limit=${runs + 3}&sort=created_at` })).body.data.map((c: { id: string }) => c.id);
    await read('contact_erase', (i) => ({ method: 'DELETE', path: `/api/contacts/${oldest[i]}` }));

    // A campaign to the contacts tagged b2b (10% of the workspace), cancelled at once.
    const created = await send(s, {
      method: 'POST',
      path: '/api/campaigns',
      body: {
        name: `Scale ${stamp}`,
        chatapp_phone_number: info.displayPhoneNumber,
        audience: { type: 'tags', tags: ['b2b'] },
        template: { name: 'scale_offer', language: 'en_US', body: [{ from_contact: 'name', fallback: 'there' }] },
      },
    });
    if (created.status !== 201 && created.status !== 202) throw new Error(`campaign: ${created.status} ${JSON.stringify(created.body)}`);
    let preparedMs: number | null = null;
    if (created.status === 202) {
      // Not cancelled at once here: how long the worker takes to prepare it, then cancelled.
      const t0 = performance.now();
      await until(async () => (await send(s, { path: `/api/campaigns/${created.body.id}` })).body.status !== 'preparing', 600_000, 'preparation');
      preparedMs = performance.now() - t0;
    }
    const cancel = await send(s, { method: 'POST', path: `/api/campaigns/${created.body.id}/cancel` });
    if (cancel.status !== 200) throw new Error(`cancel: ${cancel.status} ${JSON.stringify(cancel.body)}`);
    const campaign = {
      audience: created.body.audience_count ?? created.body.progress.total,
      answerMs: created.ms,
      status: created.status,
      cancelMs: cancel.ms,
      preparedMs,
    };
    console.log(
      `  ${label(contacts)} campaign: ${campaign.audience} recipients, answered ${created.status} in ${created.ms.toFixed(0)} ms, cancel ${cancel.ms.toFixed(0)} ms`,
    );

    const csv = async (path: string, connect = false) =>
      withRss(s.pid, async () => {
        const t0 = performance.now();
        const res = await fetch(`${s.url}${path}`, { headers: headers(s, { path, connect }) });
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        let lines = 0;
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) for (const b of chunk) if (b === 10) lines++;
        return { rows: lines - 1, seconds: (performance.now() - t0) / 1000 };
      });
    const ec = await csv('/api/contacts/export');
    const exportContacts = { ...ec.result, rssBefore: ec.before, rssPeak: ec.peak };
    console.log(`  ${label(contacts)} contacts CSV: ${ec.result.rows} rows in ${ec.result.seconds.toFixed(1)} s`);
    const es = await csv(`/api/connect/documents/${info.busyDocumentId}/sessions.csv`, true);
    const exportSessions = { ...es.result, rssBefore: es.before, rssPeak: es.peak };
    console.log(`  ${label(contacts)} document sessions CSV: ${es.result.rows} rows in ${es.result.seconds.toFixed(1)} s`);

    let importContacts: SizeFigures['importContacts'];
    if (doImport) {
      const file = newContactsCsv(importRows);
      const im = await withRss(s.pid, async () => {
        const t0 = performance.now();
        const job = { id: await startContactImport(s.url, s.key, file) };
        const done = await until(
          async () => {
            const j = (await send(s, { path: `/api/contacts/imports/${job.id}` })).body;
            return j.status === 'completed' || j.status === 'failed' ? j : false;
          },
          1_800_000,
          'import',
        );
        if (done.status !== 'completed') throw new Error(`import failed: ${JSON.stringify(done)}`);
        return { rows: importRows, seconds: (performance.now() - t0) / 1000 };
      });
      importContacts = { ...im.result, rssBefore: im.before, rssPeak: im.peak };
      console.log(`  ${label(contacts)} contacts CSV import: ${importRows} rows in ${im.result.seconds.toFixed(1)} s`);
    }
    return { contacts, seedSeconds: seeded ? info.totalSeconds : null, startSeconds, reads, campaign, exportContacts, exportSessions, importContacts };
  } finally {
    await server.stop();
    await forgetRun(url, info.workspaceId, since);
  }
}

const a = await measure(small, false);
const b = await measure(large, true);
const ratios: Record<string, number> = {};
for (const [name, ms] of Object.entries(b.reads)) ratios[`scale_${name}`] = (2 * a.reads[name]!) / ms;
ratios.scale_campaign_create = 300 / b.campaign.answerMs;
ratios.scale_campaign_cancel = 300 / b.campaign.cancelMs;
ratios.scale_export_contacts = b.exportContacts.rows / b.exportContacts.seconds / 200_000;
ratios.scale_export_document_sessions = b.exportSessions.rows / b.exportSessions.seconds / 200_000;
if (b.importContacts) ratios.scale_import_contacts = b.importContacts.rows / b.importContacts.seconds / 20_000;
for (const [name, value] of Object.entries(ratios)) console.log(`ratio ${name} ${value.toFixed(3)}`);
const mib = (x: number) => (x / 2 ** 20).toFixed(0);
console.log(
  `note: seed ${label(large)} ${b.seedSeconds === null ? 'reused' : `${b.seedSeconds.toFixed(0)} s`}, ${label(small)} ${a.seedSeconds === null ? 'reused' : `${a.seedSeconds.toFixed(0)} s`}; ` +
    `RSS contacts CSV ${mib(b.exportContacts.rssBefore)} → ${mib(b.exportContacts.rssPeak)} MiB, sessions CSV ${mib(b.exportSessions.rssBefore)} → ${mib(b.exportSessions.rssPeak)} MiB` +
    (b.importContacts ? `, import ${mib(b.importContacts.rssBefore)} → ${mib(b.importContacts.rssPeak)} MiB` : ''),
);
const out = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(
  `${out}scale-latest.json`,
  `${JSON.stringify({ machine: { cpus: cpus().length, model: cpus()[0]?.model, memoryBytes: totalmem() }, small: a, large: b, ratios }, null, 2)}\n`,
);
