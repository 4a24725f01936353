// PGlite runs PostgreSQL in single-user mode, without autovacuum: dead rows would stay in the
// tables that change all the time (the outbox, sessions, campaign recipients) and the planner
// would never get statistics (a claim of the outbox's first rows planned as a scan and sort of
// the whole backlog). This does autovacuum's job on a timer with autovacuum's default
// thresholds: VACUUM and ANALYZE past 50 + 20% dead rows, ANALYZE past 50 + 10% changed rows.
// PGlite runs each statement on the event loop's thread: while one runs, no request is served and
// no campaign message is sent. ANALYZE is the long one (its sample of 300 × the statistics target
// rows is read and sorted column by column: most of a second for 100,000 recipients at the default
// target of 100), so it samples 300 × ANALYZE_TARGET rows. Row counts do not suffer: a table of up
// to that many pages is read whole either way. Histograms and common values get 10 entries, enough
// for the equality and range lookups on indexed ids and times this schema plans.
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

interface TableStats {
  relname: string;
  live: number;
  dead: number;
  changed: number;
}

export interface Maintenance {
  /** One pass now (tests, and the timer). */
  run(): Promise<void>;
  stop(): Promise<void>;
}

/** The statistics target of the store's own ANALYZE passes (PostgreSQL's default is 100). */
export const ANALYZE_TARGET = 10;

async function analyze(db: Kysely<Database>, table: string) {
  await db.transaction().execute(async (trx) => {
    await sql`set local default_statistics_target = ${sql.lit(ANALYZE_TARGET)}`.execute(trx);
    await sql`analyze ${sql.table(table)}`.execute(trx);
  });
}

export function startPGliteMaintenance(db: Kysely<Database>, intervalMs: number, log: (message: string, extra: object) => void): Maintenance {
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const pass = async () => {
    const { rows } = await sql<TableStats>`
      select relname, n_live_tup::float8 as live, n_dead_tup::float8 as dead, n_mod_since_analyze::float8 as changed
      from pg_stat_user_tables where schemaname = 'public'`.execute(db);
    for (const table of rows) {
      if (stopped) return;
      const vacuum = table.dead > 50 + 0.2 * table.live;
      if (vacuum) await sql`vacuum ${sql.table(table.relname)}`.execute(db);
      if (vacuum || table.changed > 50 + 0.1 * table.live) await analyze(db, table.relname);
    }
  };
  const run = (): Promise<void> => {
    if (stopped) return current;
    return (current = current.then(pass).catch((error) => void log('store maintenance failed', { error: String(error) })));
  };
  const timer = setInterval(() => void run(), intervalMs);
  timer.unref();
  return {
    run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}
