// PGlite runs PostgreSQL in single-user mode, without autovacuum: dead rows would stay in the
// tables that change all the time (the outbox, sessions, campaign recipients) and the planner
// would never get statistics (a claim of the outbox's first rows planned as a scan and sort of
// the whole backlog). This does autovacuum's job on a timer with autovacuum's default
// thresholds: VACUUM (ANALYZE) past 50 + 20% dead rows, ANALYZE past 50 + 10% changed rows.
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

export function startPGliteMaintenance(db: Kysely<Database>, intervalMs: number, log: (message: string, extra: object) => void): Maintenance {
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const pass = async () => {
    const { rows } = await sql<TableStats>`
      select relname, n_live_tup::float8 as live, n_dead_tup::float8 as dead, n_mod_since_analyze::float8 as changed
      from pg_stat_user_tables where schemaname = 'public'`.execute(db);
    for (const table of rows) {
      if (stopped) return;
      if (table.dead > 50 + 0.2 * table.live) await sql`vacuum (analyze) ${sql.table(table.relname)}`.execute(db);
      else if (table.changed > 50 + 0.1 * table.live) await sql`analyze ${sql.table(table.relname)}`.execute(db);
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
