// A migrated store per test file: in-memory PGlite, or, when DATABASE_URL is set (npm run
// test:pg), a fresh PostgreSQL database created for the file and dropped afterwards.
//
// Migrations run once, into a template named by the hash of the migrations' source: on PGlite a
// dumped data directory in node_modules/.cache, loaded by each new store (with the WebAssembly
// modules compiled once per worker); on PostgreSQL a template database that each test database
// is created from. Changing a migration changes the hash, so a stale template is never used.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import pg from 'pg';
import { openStore, PGLITE_EXTENSIONS, type Store, type StoreOptions } from '#server/store/db.js';
import { base62 } from '#server/lib/ids.js';
import { timed } from './phases.js';

export const onPostgres = Boolean(process.env.DATABASE_URL);

const root = new URL('../../', import.meta.url).pathname;
const require = createRequire(import.meta.url);

/** What a migrated database depends on: the migrations, their runner, and PGlite's version. */
export function templateHash(tree = root): string {
  const hash = createHash('sha256');
  const migrations = join(tree, 'server/store/migrations');
  for (const name of readdirSync(migrations).sort()) hash.update(name).update(readFileSync(join(migrations, name)));
  hash.update(readFileSync(join(tree, 'server/store/migrate.ts')));
  hash.update(TEMPLATE_LAYOUT);
  hash.update(readFileSync(join(dirname(require.resolve('@electric-sql/pglite/pglite.wasm')), '../package.json')));
  return hash.digest('hex').slice(0, 16);
}

/**
 * How the PGlite template is laid out (pgliteTemplate): a change here makes a new one. Every test
 * store starts by unpacking it, so it is kept small: 1 MB WAL segments (initdb's default is 16 MB
 * of zeros), no template0/template1 (a test store never creates a database), checkpointed (no
 * WAL replayed at start). It went from 44 MB to 20 MB and a store's start from ~0.8 to ~0.6 s CPU.
 */
const TEMPLATE_LAYOUT = 'wal-segsize=1,no-template-databases,checkpointed';

let hash: string | undefined;
const migrationsHash = () => (hash ??= templateHash());

export async function openTestStore(options: Pick<StoreOptions, 'maintenanceMs'> = {}): Promise<Store & { url?: string }> {
  const admin = process.env.DATABASE_URL;
  if (!admin) {
    // Made (or read) before the timing: making it is counted under its migrations.
    const loadDataDir = await pgliteTemplate();
    const pglite = await timed('store', async () => PGlite.create({ ...(await pgliteArtifacts()), loadDataDir }));
    // Against the template this only confirms that every migration has run.
    return timed('migrations', () => openStore({ ...options, pglite }));
  }
  const name = `test_${base62(12).toLowerCase()}`;
  const template = await withAdmin(admin, (client) => postgresTemplate(client, admin));
  await timed('store', () => withAdmin(admin, (client) => client.query(`create database ${name} template ${template}`)));
  const url = databaseUrl(admin, name);
  const store = await timed('migrations', () => openStore({ ...options, databaseUrl: url }));
  return {
    ...store,
    url,
    async close() {
      await store.close();
      await withAdmin(admin, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

/**
 * Lays the migrated template into DATA_DIR, as a server started on it (a child process) would
 * have left it: the server then starts on the template instead of creating and migrating a
 * database. Without PostgreSQL only: with it the server takes DATABASE_URL.
 */
export async function seedDataDir(dataDir: string): Promise<void> {
  const pglite = await PGlite.create({ ...(await pgliteArtifacts()), dataDir: join(dataDir, 'pglite'), loadDataDir: await pgliteTemplate() });
  await pglite.close();
}

/** `admin` with its database replaced by `name`. */
function databaseUrl(admin: string, name: string): string {
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(connectionString: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

type Artifacts = Pick<PGliteOptions, 'pgliteWasmModule' | 'initdbWasmModule' | 'fsBundle' | 'extensions'>;
let artifacts: Promise<Artifacts> | undefined;

/** PGlite's WebAssembly modules and file-system bundle, compiled and read once per worker. */
function pgliteArtifacts(): Promise<Artifacts> {
  const file = (name: string) => readFileSync(require.resolve(`@electric-sql/pglite/${name}`));
  return (artifacts ??= (async () => ({
    pgliteWasmModule: await WebAssembly.compile(file('pglite.wasm')),
    initdbWasmModule: await WebAssembly.compile(file('initdb.wasm')),
    fsBundle: new Blob([file('pglite.data')]),
    extensions: PGLITE_EXTENSIONS,
  }))());
}

let template: Promise<Blob> | undefined;

/**
 * The migrated data directory as a tarball, made by the first worker that needs it and kept in
 * node_modules/.cache by hash. Workers racing to make it each write their own file and rename
 * it into place, so a reader never sees half a file.
 */
function pgliteTemplate(): Promise<Blob> {
  return (template ??= (async () => {
    const dir = join(root, 'node_modules/.cache/chatapp-test-store');
    const path = join(dir, `pglite-${migrationsHash()}.tar`);
    if (!existsSync(path)) {
      const pglite = await PGlite.create({ ...(await pgliteArtifacts()), initDbStartParams: ['--wal-segsize=1'] });
      const store = await timed('migrations', () => openStore({ pglite }));
      // One statement each: DROP DATABASE refuses to run in a multi-statement string's transaction.
      for (const statement of [
        'alter database template0 is_template false',
        'drop database template0',
        'alter database template1 is_template false',
        'drop database template1',
        'checkpoint',
      ])
        await pglite.query(statement);
      const dump = await pglite.dumpDataDir('none');
      await store.close();
      mkdirSync(dir, { recursive: true });
      const partial = `${path}.${process.pid}`;
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
      renameSync(partial, path);
    }
    return new Blob([readFileSync(path)]);
  })());
}

/**
 * The migrated template database on the PostgreSQL server, made once under an advisory lock
 * (several workers, or several test runs, share the server). When a new one is made, templates
 * of older migrations beyond the three newest are dropped.
 */
async function postgresTemplate(client: pg.Client, admin: string): Promise<string> {
  const name = `template_chatapp_${migrationsHash()}`;
  const exists = async () => (await client.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  if (await exists()) return name;
  await client.query('select pg_advisory_lock(hashtext($1))', ['chatapp test template']);
  try {
    if (await exists()) return name;
    const building = `${name}_building`;
    await client.query(`drop database if exists ${building} with (force)`);
    await client.query(`create database ${building}`);
    const store = await timed('migrations', () => openStore({ databaseUrl: databaseUrl(admin, building) }));
    await store.close();
    // Other checkouts on this server (worktrees, branches with other migrations) may be running
    // on their own templates: only those older than the three newest are dropped.
    const stale = await client.query<{ datname: string }>(
      "select datname from pg_database where datname like 'template\\_chatapp\\_%' and datistemplate order by oid desc offset 2",
    );
    for (const { datname } of stale.rows) {
      await client.query(`alter database ${datname} is_template false`);
      await client.query(`drop database if exists ${datname} with (force)`);
    }
    await client.query(`alter database ${building} rename to ${name}`);
    await client.query(`alter database ${name} is_template true`);
    return name;
  } finally {
    await client.query('select pg_advisory_unlock(hashtext($1))', ['chatapp test template']);
  }
}
