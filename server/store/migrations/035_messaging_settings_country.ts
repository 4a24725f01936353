// The workspace's country (ISO 3166-1 alpha-2): national phone numbers (contacts, imports, flow
// answers) are read in it. Null: the country of the workspace's first number.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `alter table messaging_settings add column country text;`);
}
