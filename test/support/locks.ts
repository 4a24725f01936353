// Lining up PostgreSQL transactions in the tests that show two writes at once on the same rows:
// hold one open with its locks taken, and wait until others queue behind it.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '#server/store/schema.js';
import { eventually } from './eventually.js';

/**
 * Runs `change` in a transaction and keeps it open until `commit()` is called; `beforeCommit` runs
 * in the same transaction then. `commit()` answers the transaction's outcome.
 */
export async function holdTransaction(
  db: Kysely<Database>,
  change: (trx: Transaction<Database>) => Promise<unknown>,
  beforeCommit?: (trx: Transaction<Database>) => Promise<unknown>,
) {
  let commit!: () => void;
  const released = new Promise<void>((resolve) => (commit = resolve));
  let applied!: () => void;
  const ready = new Promise<void>((resolve) => (applied = resolve));
  const done = db.transaction().execute(async (trx) => {
    await change(trx);
    applied();
    await released;
    await beforeCommit?.(trx);
  });
  await Promise.race([ready, done]);
  return { commit: async () => (commit(), done) };
}

/** Resolves once `n` backends of this database wait for a lock (blocked by a held transaction or each other). */
export async function untilLockWaiters(db: Kysely<Database>, n = 1) {
  // PostgreSQL says nothing when a backend starts waiting: its activity view is polled.
  await eventually(
    async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(db))
        .rows[0]!.n >= n,
    { within: 2_000, what: `${n} transactions waiting on a lock`, every: 10 },
  );
}
