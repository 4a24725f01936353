// A Kysely dialect for embedded PGlite. PGlite has a single connection, so the driver hands it
// to one caller at a time (a whole transaction included) and reports affected-row counts, which
// kysely-pglite does not do safely (see the toolchain notes). Queries run as prepared statements
// (./pglite-statements.ts).
import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { InlineLimitsCompiler } from './inline-limits.js';
import { Mutex } from './mutex.js';
import { PGliteStatements } from './pglite-statements.js';

// PGlite runs a query synchronously and answers in a promise, so callers' chains of queries run as
// one stretch of promise callbacks, and Node's nextTick queue waits until every chain in flight
// has finished. HTTP responses leave for the socket on that queue (a response uncorks its socket
// on the next tick): a login stream's `verified` frame waited for the automation's dozen queries
// on the same message. So once a stretch has run STRETCH_MS, the next query waits a tick
// and what is queued there goes first. A tick before every query did the same for the stream
// but cost a campaign on PGlite part of its send rate.
const STRETCH_MS = 0.5;
let stretchStart = -1; // -1: no stretch running (its marker tick has run)

function tickDue(): boolean {
  const now = performance.now();
  if (stretchStart < 0) {
    stretchStart = now;
    process.nextTick(() => (stretchStart = -1));
    return false;
  }
  return now - stretchStart > STRETCH_MS;
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly statements: PGliteStatements) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (tickDue()) await new Promise((resolve) => process.nextTick(resolve));
    const result = await this.statements.query<R>(query.sql, query.parameters);
    const kind = query.query.kind;
    const mutates = kind === 'InsertQueryNode' || kind === 'UpdateQueryNode' || kind === 'DeleteQueryNode' || kind === 'MergeQueryNode';
    return {
      rows: result.rows,
      ...(mutates || result.affectedRows ? { numAffectedRows: BigInt(result.affectedRows ?? 0) } : {}),
    };
  }

  // biome-ignore lint/correctness/useYield: the driver interface wants a generator; PGlite has no cursor to stream
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on PGlite');
  }
}

class PGliteDriver implements Driver {
  private readonly mutex = new Mutex();
  private readonly releases = new WeakMap<DatabaseConnection, () => void>();
  private readonly connection: PGliteConnection;

  constructor(private readonly pg: PGlite) {
    this.connection = new PGliteConnection(new PGliteStatements(pg));
  }

  async init(): Promise<void> {
    await this.pg.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.mutex.lock();
    // One connection object, one holder at a time: remember how to release this hold.
    const handle = Object.create(this.connection) as PGliteConnection;
    this.releases.set(handle, release);
    return handle;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery(CompiledQuery.raw(`begin${isolation}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.releases.get(connection)?.();
    this.releases.delete(connection);
  }

  async destroy(): Promise<void> {
    if (!this.pg.closed) await this.pg.close();
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly pg: PGlite) {}

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.pg);
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }

  createQueryCompiler(): QueryCompiler {
    return new InlineLimitsCompiler();
  }
}
