// The store: Kysely over embedded PGlite (default, in DATA_DIR) or PostgreSQL (DATABASE_URL),
// with the same SQL and migrations, plus LISTEN/NOTIFY for fan-out between server instances.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect.js';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';

export type Listener = (payload: string) => void;

export interface Store {
  db: Kysely<Database>;
  kind: 'pglite' | 'postgres';
  /** Subscribes to a NOTIFY channel; resolves with an unsubscribe function. */
  listen(channel: string, listener: Listener): Promise<() => Promise<void>>;
  /** Sends a NOTIFY to every listening instance (this one included). */
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL connection string; PGlite when absent. */
  databaseUrl?: string;
  /** PGlite's data directory; in memory when absent. */
  dataDir?: string;
  /** An already open PGlite (tests clone one per file). */
  pglite?: PGlite;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl ? await openPostgres(options.databaseUrl) : await openPGlite(options);
  await migrateToLatest(store.db);
  return store;
}

async function openPGlite({ dataDir, pglite }: StoreOptions): Promise<Store> {
  let pgl = pglite;
  if (!pgl) {
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    pgl = await PGlite.create(dataDir ? join(dataDir, 'pglite') : undefined);
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pgl) });
  return {
    db,
    kind: 'pglite',
    async listen(channel, listener) {
      assertChannel(channel);
      const unsubscribe = await pgl.listen(channel, listener);
      return async () => unsubscribe();
    },
    async notify(channel, payload) {
      assertChannel(channel);
      await pgl.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * A connection that PostgreSQL ends (a restart, a failover, `pg_terminate_backend`) emits
 * `error`; without a listener that is an uncaught exception that takes the process down. The
 * pool drops such an idle client and opens a new one on the next query, so it is only reported.
 */
function reportConnectionError(where: 'pool' | 'listener') {
  return (error: Error & { code?: string }) =>
    process.stderr.write(`${JSON.stringify({ level: 'warn', msg: `PostgreSQL ${where} connection ended`, code: error.code, error: error.message })}\n`);
}

async function openPostgres(connectionString: string): Promise<Store> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  pool.on('error', reportConnectionError('pool'));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // One dedicated connection carries every LISTEN of this instance. If PostgreSQL ends it, the
  // LISTENs are gone until a restart: events then reach this instance only through the durable
  // paths (outbox, leases, timers), which never depend on NOTIFY.
  const listener = new pg.Client({ connectionString });
  listener.on('error', reportConnectionError('listener'));
  await listener.connect();
  const listeners = new Map<string, Set<Listener>>();
  listener.on('notification', (msg) => {
    for (const fn of listeners.get(msg.channel) ?? []) fn(msg.payload ?? '');
  });
  return {
    db,
    kind: 'postgres',
    async listen(channel, fn) {
      assertChannel(channel);
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        await listener.query(`listen ${channel}`);
      }
      set.add(fn);
      return async () => {
        set!.delete(fn);
        if (!set!.size) {
          listeners.delete(channel);
          await listener.query(`unlisten ${channel}`);
        }
      };
    },
    async notify(channel, payload) {
      assertChannel(channel);
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await listener.end();
      await db.destroy();
    },
  };
}

function assertChannel(channel: string) {
  if (!CHANNEL.test(channel)) throw new Error(`invalid NOTIFY channel name: ${channel}`);
}
