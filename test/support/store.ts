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
    const pglite = pool.pop() ?? (await freshPGlite());
    // The template's print, from the worker's first store before any test touched it.
    templatePrint ??= schemaPrint(pglite);
    await templatePrint;
    const kept = keepOpen(pglite);
    // Against the template this only confirms that every migration has run.
    const store = await timed('migrations', () => openStore({ ...options, pglite: kept.proxy }));
    return {
      ...store,
      async close() {
        await store.close();
        await timed('reset', () => recycle(pglite, kept.channels));
      },
    };
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

async function freshPGlite(): Promise<PGlite> {
  // Made (or read) before the timing: making it is counted under its migrations.
  const loadDataDir = await pgliteTemplate();
  return timed('store', async () => PGlite.create({ ...(await pgliteArtifacts()), loadDataDir }));
}

/*
 * Closed PGlite stores are reset and reused by the worker's next store instead of closed: a new
 * one costs about 0.6 s of CPU (WebAssembly start-up, the template unpacked), a reset a few
 * tens of ms. A reset store is indistinguishable from a fresh one to a test: its session is
 * discarded (settings, temporary tables, advisory locks, LISTENs), its JavaScript listeners are
 * removed, every table but the migrations' is truncated with its sequences restarted and its
 * activity statistics reset, and its schema, functions, triggers, roles and settings must still
 * match the template's (a test that altered them, or left a transaction open, gets its store
 * closed instead). Tests that close their store explicitly get the same treatment: after close()
 * the store object is not used.
 */
const pool: PGlite[] = [];
/** Stores kept per worker: a file has at most a shared app's and a test's store open at once. */
const POOL_SIZE = 2;
let templatePrint: Promise<string> | undefined;

/**
 * Closes the stores kept for reuse. A worker process is ended by the runner; the runner's own
 * process (a global setup's store) must close them, or they keep it from exiting.
 */
export async function closePooledStores(): Promise<void> {
  while (pool.length) await pool.pop()!.close();
}

/** The PGlite as the store sees it, except that closing it leaves it open for the pool. */
function keepOpen(pglite: PGlite) {
  const channels = new Set<string>();
  const proxy = new Proxy(pglite, {
    get(target, key) {
      if (key === 'close') return async () => {};
      if (key === 'listen') {
        return (channel: string, ...rest: unknown[]) => {
          channels.add(channel);
          return (target.listen as (...args: unknown[]) => unknown)(channel, ...rest);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { proxy, channels };
}

async function recycle(pglite: PGlite, channels: Set<string>): Promise<void> {
  try {
    for (const channel of channels) await pglite.unlisten(channel);
    await pglite.exec('discard all');
    const print = await schemaPrint(pglite);
    if (print !== (await templatePrint)) throw new Error('schema changed');
    // Most tables are empty after a test: only those with a row are truncated (a truncation
    // makes new files for the table and its indexes), and every sequence restarts (a rolled-back
    // insert advances one too).
    const { rows } = await pglite.query<{ name: string }>(await nonEmptyTables(pglite));
    if (rows.length) await pglite.exec(`truncate ${rows.map((r) => r.name).join(', ')} cascade`);
    await pglite.exec(
      "select setval(c.oid, s.seqstart, false) from pg_class c join pg_sequence s on s.seqrelid = c.oid join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'",
    );
    // Activity counters and the last vacuum and analyse times start again, as in a fresh store
    // (the maintenance decides on them).
    await pglite.exec('select pg_stat_reset()');
    if (pool.length >= POOL_SIZE) throw new Error('pool full');
    pool.push(pglite);
  } catch {
    if (!pglite.closed) await pglite.close();
  }
}

let nonEmptyQuery: Promise<string> | undefined;

/** The query naming (quoted) each table with a row, but the migrations' own: made once, by the database. */
function nonEmptyTables(pglite: PGlite): Promise<string> {
  return (nonEmptyQuery ??= pglite
    .query<{ probe: string }>(
      "select string_agg(format('select %L as name where exists (select 1 from %I)', quote_ident(c.relname), c.relname), ' union all ') as probe from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind in ('r', 'p') and c.relname not like 'kysely\\_%'",
    )
    .then((r) => r.rows[0]!.probe));
}

/** A digest of everything a test could change besides rows: relations and their columns, defaults, constraints, triggers, functions, roles, settings. */
async function schemaPrint(pglite: PGlite): Promise<string> {
  const { rows } = await pglite.query<{ print: string }>(`
    select md5(string_agg(x, ',' order by x)) as print from (
      select 'c:' || n.nspname || '.' || c.relname || ':' || c.relkind::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_to%'
      union all
      select 'a:' || c.relname || '.' || a.attname || ':' || a.atttypid || ':' || a.attnotnull || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
        from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
        left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where n.nspname = 'public' and a.attnum > 0 and not a.attisdropped
      union all
      select 'k:' || conrelid::regclass || '.' || conname || ':' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
      union all
      select 'i:' || indexrelid::regclass || ':' || pg_get_indexdef(indexrelid) from pg_index i join pg_class c on c.oid = i.indrelid where c.relnamespace = 'public'::regnamespace
      union all
      select 't:' || tgrelid::regclass || '.' || tgname || ':' || tgenabled::text from pg_trigger where not tgisinternal
      union all
      select 'p:' || n.nspname || '.' || proname || ':' || md5(coalesce(prosrc, '')) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname not in ('pg_catalog', 'information_schema')
      union all
      select 'r:' || rolname || ':' || rolsuper || ':' || rolcanlogin from pg_roles
      union all
      select 's:' || coalesce(setdatabase::text, '') || ':' || coalesce(setrole::text, '') || ':' || array_to_string(setconfig, ';') from pg_db_role_setting
      union all
      select 'g:' || name || '=' || setting from pg_settings where source not in ('default', 'override', 'session', 'client')
    ) s(x)`);
  return rows[0]!.print;
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
