// The database's clock as the time every instance goes by (bad-inputs F-12). Instances whose
// system clocks disagree (by minutes, on a misconfigured host) would otherwise disagree on when
// a login session, a verification token or a schedule is due: one instance would expire a
// session another just started. Each instance measures its offset to the database's
// clock_timestamp() at start and every minute, and `now()` is its own clock plus that offset.
// Offsets under a second are measurement noise (a query's round trip) and are ignored, so an
// instance on the same host as its database (embedded PGlite) keeps its own clock exactly.
import { sql, type Kysely } from 'kysely';

export interface DatabaseClock {
  now(): Date;
  /** The offset in use, milliseconds (0 when under `minSkewMs`). */
  offsetMs(): number;
  stop(): void;
}

export async function databaseClock(db: Kysely<any>, { refreshMs = 60_000, minSkewMs = 1_000 } = {}): Promise<DatabaseClock> {
  let offset = 0;
  const measure = async () => {
    const before = Date.now();
    const { rows } = await sql<{ ms: number | string }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`.execute(db);
    const after = Date.now();
    const skew = Number(rows[0]!.ms) - (before + after) / 2;
    offset = Math.abs(skew) >= minSkewMs ? Math.round(skew) : 0;
  };
  await measure();
  // A failed refresh keeps the last offset; the database being away is reported by the requests.
  const timer = setInterval(() => void measure().catch(() => {}), refreshMs);
  timer.unref();
  return { now: () => new Date(Date.now() + offset), offsetMs: () => offset, stop: () => clearInterval(timer) };
}
