// bad-inputs F-6: the database's disk full. PostgreSQL answers every write with SQLSTATE 53100 (disk_full);
// here a trigger raises it on the tables of this file's own database while the server runs. Writes
// answer 503 `unavailable` with Retry-After (never 500), leave no partial rows (a contact whose
// tag rows fail after its own insert is rolled back) and no orphan file (a document upload
// whose row fails removes its stored file), reads are still served, and once space is back
// (the trigger dropped) writes succeed again without a restart (server/store/unavailable.ts).
// Then DATA_DIR full mid-upload: uploaded document bytes are written to DATA_DIR/documents
// (server/apis/connect/content/storage.ts). A second instance runs on a tmpfs filled to the last
// byte: the upload fails, leaves no file and no row, reads are served, and once space is freed
// the upload succeeds. The upload answers the catalogue's 507. Mounting a
// tmpfs needs root; where the test cannot mount one it says so in its figures line and fails.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PNG } from '../unit/connect/content/support.js';
import { rowCounts } from '../security/support.js';
import { freshDatabase, report, startServer, type Server } from './support.js';

const UNAVAILABLE = 'https://chatapp.example/problems/unavailable';
let database: Awaited<ReturnType<typeof freshDatabase>>;
let server: Server;
let onTmpfs: Server | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'faults-disk-'));

beforeAll(async () => {
  database = await freshDatabase();
  server = await startServer(database.url, { SEED: '1', DATA_DIR: dataDir });
  await sql`create function faults_disk_full() returns trigger language plpgsql as $$
    begin raise exception using errcode = '53100', message = 'could not extend file: No space left on device'; end $$`.execute(database.db);
});
afterAll(async () => {
  await Promise.all([server?.stop(), onTmpfs?.stop()]);
  if (mounted) {
    execFileSync('umount', [mounted]);
    rmdirSync(mounted);
  }
  await database?.close();
});

async function tables(): Promise<string[]> {
  const rows = await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public' order by 1`.execute(database.db);
  return rows.rows.map((r) => r.name);
}
const counts = () => rowCounts(database.db);
/** Disk full for `names`: every row written to them raises 53100. */
async function fill(names: string[]) {
  for (const t of names)
    await sql`create trigger faults_disk_full before insert or update or delete on ${sql.table(t)} for each row execute function faults_disk_full()`.execute(
      database.db,
    );
}
async function free() {
  for (const t of await tables()) await sql`drop trigger if exists faults_disk_full on ${sql.table(t)}`.execute(database.db);
}
const storedFiles = () => readdirSync(join(dataDir, 'documents'), { withFileTypes: true }).map((d) => d.name);

it('F-6 database disk full (53100): writes 503 with Retry-After, no partial rows or files, reads served, recovery', async () => {
  const seed = server.info;
  const owner = { authorization: seed.owner!, 'content-type': 'application/json' };
  const connect = { authorization: seed.connect! };
  let n = 0;
  const contact = (tags: string[] = []) =>
    fetch(`${seed.url}/api/contacts`, {
      method: 'POST',
      headers: owner,
      body: JSON.stringify({ contact_no: `+49151${String(1_000_000 + ++n)}`, name: `Disk ${n}`, tags }),
    });
  const upload = () => {
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'pixel.png');
    return fetch(`${seed.url}/api/connect/documents`, { method: 'POST', headers: connect, body: form });
  };
  const reads = () =>
    Promise.all([
      fetch(`${seed.url}/api/contacts`, { headers: owner }),
      fetch(`${seed.url}/api/connect/documents`, { headers: connect }),
      fetch(`${seed.url}/healthz`),
    ]);
  // Before: every call works, and there is one document file and one contact to read.
  expect((await contact(['before'])).status).toBe(201);
  expect((await upload()).status).toBe(201);
  const filesBefore = storedFiles();
  expect(filesBefore).toHaveLength(1);

  const answers: { status: number; type?: string; retryAfter: string | null; body: string }[] = [];
  const record = async (res: Response) => {
    const body = await res.text();
    answers.push({
      status: res.status,
      type: res.headers.get('content-type')?.startsWith('application/problem+json') ? JSON.parse(body).type : undefined,
      retryAfter: res.headers.get('retry-after'),
      body,
    });
  };

  // 1. Only the last table of a multi-statement write is full: the contact and its new tag rows
  // were inserted in the transaction before contact_tags failed, and all of it is rolled back.
  const before = await counts();
  await fill(['contact_tags']);
  for (let i = 0; i < 3; i++) await record(await contact([`tag-${i}`, 'vip']));
  const afterPartial = await counts();
  await free();

  // 2. The whole database is full: every write fails, every read is served.
  await fill(await tables());
  const statusesOfReads: number[] = [];
  for (let i = 0; i < 3; i++) {
    await record(await contact());
    await record(await upload());
    statusesOfReads.push(...(await reads()).map((r) => r.status));
  }
  // The upload's file was stored before its row failed: it is removed, none is left behind.
  const filesDuring = storedFiles();
  const afterFull = await counts();
  await free();
  const changed = (after: Record<string, number>) => Object.keys(after).filter((t) => after[t] !== before[t]);
  const partialRows = [...changed(afterPartial), ...changed(afterFull)];

  // 3. Space is back: writes succeed again on the same process, no restart.
  const recovered = [(await contact(['after'])).status, (await upload()).status];
  const alive = server.process.exitCode === null && !server.process.signalCode;

  const statuses = answers.map((a) => a.status);
  report('F-6', {
    lost: 0,
    duplicated: 0,
    writes: answers.length,
    s503: statuses.filter((s) => s === 503).length,
    s500: statuses.filter((s) => s === 500).length,
    reads200: `${statusesOfReads.filter((s) => s === 200).length}/${statusesOfReads.length}`,
    changedTables: partialRows.length,
    orphanFiles: filesDuring.length - filesBefore.length,
    recovered: recovered.join('/'),
  });
  for (const answer of answers) {
    expect({ status: answer.status, type: answer.type, retryAfter: answer.retryAfter }).toEqual({
      status: 503,
      type: UNAVAILABLE,
      retryAfter: expect.stringMatching(/^\d+$/),
    });
    expect(answer.body).not.toMatch(/No space left|53100|faults_disk_full|at .*\.ts/); // no internals
  }
  expect(partialRows).toEqual([]);
  expect(statusesOfReads.every((s) => s === 200)).toBe(true);
  expect(filesDuring).toEqual(filesBefore);
  expect(recovered).toEqual([201, 201]);
  expect(storedFiles()).toHaveLength(2);
  expect(alive).toBe(true);
}, 120_000);

let mounted: string | undefined;
let fullAnswer: { status: number; contentType: string | null; body: string } | undefined;

it('F-6 DATA_DIR full mid-upload: no file, no row, no internals, reads served, upload works once space is freed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'faults-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir]);
  mounted = dir;
  mkdirSync(join(dir, 'documents'), { mode: 0o700 });
  // Another instance on the same database: the first one's Connect bearer is valid there.
  onTmpfs = await startServer(database.url, { DATA_DIR: dir });
  const url = onTmpfs.info.url;
  const connect = { authorization: server.info.connect! };
  const upload = () => {
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'pixel.png');
    return fetch(`${url}/api/connect/documents`, { method: 'POST', headers: connect, body: form });
  };
  const documents = async () => Number((await sql<{ n: string }>`select count(*) as n from documents`.execute(database.db)).rows[0].n);
  // Every byte of the file system taken.
  const filler = join(dir, 'filler');
  try {
    writeFileSync(filler, Buffer.alloc(1024 * 1024));
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
  }
  const rowsBefore = await documents();
  const res = await upload();
  fullAnswer = { status: res.status, contentType: res.headers.get('content-type'), body: await res.text() };
  const leftFiles = readdirSync(join(dir, 'documents'));
  const rowsDuring = await documents();
  const read = await fetch(`${url}/api/connect/documents`, { headers: connect });
  rmSync(filler);
  const recovered = await upload();
  report('F-6 data-dir', {
    lost: 0,
    duplicated: 0,
    status: fullAnswer.status,
    leftFiles: leftFiles.length,
    newRows: rowsDuring - rowsBefore,
    read: read.status,
    recovered: recovered.status,
  });
  expect(fullAnswer.status).toBeGreaterThanOrEqual(500); // refused, not stored
  expect(fullAnswer.contentType).toMatch(/^application\/problem\+json/);
  expect(fullAnswer.body).not.toMatch(/ENOSPC|no space|faults-full|\.upload-|at .*\.ts/i); // no internals
  expect(leftFiles).toEqual([]);
  expect(rowsDuring).toBe(rowsBefore);
  expect(read.status).toBe(200);
  expect(recovered.status).toBe(201);
  expect(readdirSync(join(dir, 'documents'))).toHaveLength(1);
}, 120_000);

// A full DATA_DIR (ENOSPC from storeFile) answers 507 `insufficient-storage` (declared on
// uploadDocument). Reads the answer of the test above.
it('F-6 DATA_DIR full mid-upload: the upload answers 507 problem+json', () => {
  expect(fullAnswer?.status).toBe(507);
  expect(fullAnswer?.body).toContain('https://chatapp.example/problems/insufficient-storage');
});
