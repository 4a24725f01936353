// The store: Kysely over embedded PGlite (default, in DATA_DIR) or PostgreSQL (DATABASE_URL),
// with the same SQL and migrations, plus LISTEN/NOTIFY for fan-out between server instances.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { Kysely } from 'kysely';
import pg from 'pg';
import { postgresCopyOut, type CopyOut } from './copy-out.js';
import { PGliteDialect } from './pglite-dialect.js';
import { startPGliteMaintenance } from './pglite-maintenance.js';
import { UnavailableAwareDialect } from './unavailable.js';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';

/**
 * The extensions the migrations create (037: trigram search), loaded into every PGlite: pass
 * them to PGlite.create wherever a store's PGlite is made outside openStore.
 */
export const PGLITE_EXTENSIONS = { pg_trgm };

export type Listener = (payload: string) => void;

export interface Store {
  db: Kysely<Database>;
  kind: 'pglite' | 'postgres';
  /** Subscribes to a NOTIFY channel; resolves with an unsubscribe function. */
  listen(channel: string, listener: Listener): Promise<() => Promise<void>>;
  /**
   * Called each time the LISTEN connection is back after PostgreSQL ended it, once it LISTENs
   * again on every channel: notifications sent meanwhile are lost, so whoever relies on them
   * re-reads the state they would have announced. Never called on PGlite (one process, nothing
   * to lose). Returns a function that removes the callback.
   */
  onReconnect(callback: () => void): () => void;
  /** Sends a NOTIFY to every listening instance (this one included). */
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: one pass of its VACUUM and ANALYZE now (it has no autovacuum). */
  maintain?(): Promise<void>;
  /** PostgreSQL only: `COPY (select …) TO STDOUT`, a few at a time (./copy-out.ts). */
  copyOut?: CopyOut;
  /** PostgreSQL only: the connection pool's size, clients in use and callers waiting for one (metrics). */
  poolStats?(): { max: number; inUse: number; waiting: number };
  /** Where the store's warnings go from now on: the server's logger, once it has one. */
  useLogger(log: StoreLogger): void;
}

/** The part of a pino logger the store uses (the app passes its own: one log stream). */
export interface StoreLogger {
  warn(fields: object, msg: string): void;
}

/**
 * Until the app hands its logger over (a store opened on its own, by a script): a line shaped
 * like the logger's (numeric level, epoch-ms time), so that a filter on levels still sees it.
 */
const stderrLogger: StoreLogger = {
  warn: (fields, msg) => process.stderr.write(`${JSON.stringify({ level: 40, time: Date.now(), ...fields, msg })}\n`),
};

/** The warnings of one store, sent to the logger it was last given. */
class StoreLog {
  logger = stderrLogger;
  readonly warn = (msg: string, extra: object): void => this.logger.warn({ component: 'store', ...extra }, msg);
  /** An ended pool or LISTEN connection (see openPostgres). */
  connectionEnded(where: 'pool' | 'listener') {
    return (error: Error & { code?: string }) => this.warn(`PostgreSQL ${where} connection ended`, { code: error.code, error: error.message });
  }
}

export interface StoreOptions {
  /** PostgreSQL connection string; PGlite when absent. */
  databaseUrl?: string;
  /** PGlite's data directory; in memory when absent. */
  dataDir?: string;
  /** An already open PGlite (tests clone one per file). */
  pglite?: PGlite;
  /** How often PGlite's tables are checked for VACUUM and ANALYZE (./pglite-maintenance.ts). */
  maintenanceMs?: number;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openStore(options: StoreOptions): Promise<Store> {
  const log = new StoreLog();
  const store = options.databaseUrl ? await openPostgres(options.databaseUrl, log) : await openPGlite(options, log);
  await migrateToLatest(store.db);
  return store;
}

async function openPGlite({ dataDir, pglite, maintenanceMs = 10_000 }: StoreOptions, log: StoreLog): Promise<Store> {
  let pgl = pglite;
  if (!pgl) {
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    pgl = await PGlite.create(dataDir ? join(dataDir, 'pglite') : undefined, { extensions: PGLITE_EXTENSIONS });
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pgl) });
  const maintenance = startPGliteMaintenance(db, maintenanceMs, log.warn);
  return {
    db,
    kind: 'pglite',
    useLogger: (logger) => {
      log.logger = logger;
    },
    maintain: () => maintenance.run(),
    async listen(channel, listener) {
      assertChannel(channel);
      const unsubscribe = await pgl.listen(channel, listener);
      return async () => unsubscribe();
    },
    onReconnect: () => () => {},
    async notify(channel, payload) {
      assertChannel(channel);
      await pgl.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await maintenance.stop();
      await db.destroy();
    },
  };
}

/**
 * A connection that PostgreSQL ends (a restart, a failover, `pg_terminate_backend`) emits
 * `error`; without a listener that is an uncaught exception that takes the process down. The
 * pool drops such an idle client and opens a new one on the next query, so it is only reported.
 */
const reportConnectionError = (log: StoreLog, where: 'pool' | 'listener') => log.connectionEnded(where);

async function openPostgres(connectionString: string, log: StoreLog): Promise<Store> {
  // A connection attempt to an unreachable database fails after 5 s instead of waiting forever,
  // so a request answers 503 rather than hanging (bad-inputs F-4, F-5).
  const pool = new pg.Pool({ connectionString, max: 10, connectionTimeoutMillis: 5_000, keepAlive: true });
  pool.on('error', reportConnectionError(log, 'pool'));
  // The pool listens for errors on idle clients only: a client checked out for a query when its
  // socket is reset would emit `error` to no one, an uncaught exception that kills the process.
  // The query itself fails (503 above it) and the pool drops the client at release.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new UnavailableAwareDialect({ pool }) });
  const listener = new ListenConnection(connectionString, log);
  await listener.open();
  return {
    db,
    kind: 'postgres',
    copyOut: postgresCopyOut(pool),
    poolStats: () => ({ max: pool.options.max ?? 10, inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }),
    useLogger: (logger) => {
      log.logger = logger;
    },
    listen: (channel, fn) => {
      assertChannel(channel);
      return listener.listen(channel, fn);
    },
    onReconnect: (callback) => listener.onReconnect(callback),
    async notify(channel, payload) {
      assertChannel(channel);
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await listener.close();
      await db.destroy();
    },
  };
}

/**
 * The one dedicated connection that carries every LISTEN of this instance. When PostgreSQL ends
 * it (a restart, a failover, pg_terminate_backend, a network cut) it reconnects with capped
 * backoff, LISTENs again on every channel, and then tells the `onReconnect` callbacks.
 * Notifications sent while it was away are lost: NOTIFY only wakes and fans out, and every
 * subscriber re-reads what it missed from the tables (docs/reliability.md, "Lost notifications").
 */
class ListenConnection {
  private client?: pg.Client;
  private readonly channels = new Map<string, Set<Listener>>();
  private closed = false;
  private retry?: NodeJS.Timeout;
  private failures = 0;
  private readonly reconnected = new Set<() => void>();
  /** Set by the first successful open: later opens are reconnections. */
  private opened = false;

  constructor(
    private readonly connectionString: string,
    private readonly log: StoreLog,
  ) {}

  async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 5_000, keepAlive: true });
    client.on('error', reportConnectionError(this.log, 'listener'));
    client.on('notification', (msg) => {
      for (const fn of this.channels.get(msg.channel) ?? []) fn(msg.payload ?? '');
    });
    client.on('end', () => {
      // Only the live connection reconnects (a failed attempt is retried by reconnectLater).
      if (this.client !== client) return;
      this.client = undefined;
      this.reconnectLater();
    });
    await client.connect();
    for (const channel of this.channels.keys()) await client.query(`listen ${channel}`);
    const again = this.opened;
    this.client = client;
    this.opened = true;
    this.failures = 0;
    // Only now: an event committed after these LISTENs is notified, one committed before them is
    // in the tables the callbacks re-read.
    if (!again) return;
    for (const callback of [...this.reconnected]) {
      try {
        callback();
      } catch (error) {
        this.log.warn('reconnect callback failed', { error: String(error) });
      }
    }
  }

  onReconnect(callback: () => void): () => void {
    this.reconnected.add(callback);
    return () => this.reconnected.delete(callback);
  }

  private reconnectLater() {
    if (this.closed || this.retry) return;
    const delay = Math.min(200 * 2 ** this.failures, 5_000);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.closed) return;
      this.open().catch((error: Error & { code?: string }) => {
        this.failures++;
        reportConnectionError(this.log, 'listener')(error);
        this.reconnectLater();
      });
    }, delay);
    this.retry.unref();
  }

  async listen(channel: string, fn: Listener): Promise<() => Promise<void>> {
    let set = this.channels.get(channel);
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
      // Without a connection now, the reconnect LISTENs on every channel in the map.
      await this.client?.query(`listen ${channel}`).catch(() => this.client?.end());
    }
    set.add(fn);
    return async () => {
      set!.delete(fn);
      if (!set!.size && this.channels.get(channel) === set) {
        this.channels.delete(channel);
        await this.client?.query(`unlisten ${channel}`).catch(() => {});
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => {});
  }
}

function assertChannel(channel: string) {
  if (!CHANNEL.test(channel)) throw new Error(`invalid NOTIFY channel name: ${channel}`);
}
