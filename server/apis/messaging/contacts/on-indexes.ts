// Statements whose right plan is known: a probe that finds at most a few thousand rows through
// a trigram, GIN or (tag, contact) index. Left to estimates, PostgreSQL prices a sequential scan
// with a LIMIT as cheap whenever it guesses the matches are common, and a guess that is wrong
// (a fragment found nowhere, a value on few rows) reads the whole workspace. `set local` holds
// for this transaction only.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '#server/store/schema.js';

export async function onIndexes<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    return fn(trx);
  });
}
