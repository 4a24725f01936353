// Statements whose right plan is known: a probe that finds at most a few thousand rows through
// a trigram, GIN or (tag, contact) index. Left to estimates, PostgreSQL prices a sequential scan
// with a LIMIT as cheap whenever it guesses the matches are common, and a guess that is wrong
// (a fragment found nowhere, a value on few rows) reads the whole workspace. `set local` holds
// for this transaction only.
import { sql, type Compilable, type Kysely, type Transaction } from 'kysely';
import type { Database } from '#server/store/schema.js';

export async function onIndexes<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    return fn(trx);
  });
}

/**
 * Runs a page's reads in one transaction without parallel workers when `walking` (a page read
 * along the sort's index past contacts that do not match). Such a page stops after a few rows,
 * and PostgreSQL starts its workers for each statement: a page of two tags at a million contacts
 * waited 10 ms for its workers before its first row and took 14 ms, 9.5 ms without them. Other
 * pages (of known ids, or of every contact) are read as they are, with no transaction to open.
 */
export async function readPage<T>(db: Kysely<Database>, walking: boolean, fn: (read: <R>(query: Compilable<R>) => Promise<R[]>) => Promise<T>): Promise<T> {
  if (!walking) return fn(async (query) => (await db.executeQuery(query.compile())).rows);
  return db.transaction().execute(async (trx) => {
    await sql`set local max_parallel_workers_per_gather = 0`.execute(trx);
    return fn(async (query) => (await trx.executeQuery(query.compile())).rows);
  });
}
