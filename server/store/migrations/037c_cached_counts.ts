// Counts of large tags and segments (docs/scale.md, contacts/counts.ts): a count over 10,000
// contacts is kept on the row with when it was made, so listing tags or segments does not count
// a whole workspace each time; smaller counts stay live and are not stored.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table tags add column contact_count integer;
    alter table tags add column counted_at timestamptz;
    alter table segments add column contact_count integer;
    alter table segments add column counted_at timestamptz;
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table segments drop column counted_at, drop column contact_count;
    alter table tags drop column counted_at, drop column contact_count;
  `,
  );
}
