// Contact creation times at millisecond precision, as every other writer stores them (JS dates):
// the list's keyset then orders by the indexed column itself instead of date_trunc() of it, which
// no index can serve (date_trunc on timestamptz is not immutable), so a page no longer sorts all
// of a workspace's contacts.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table contacts alter column created_at set default date_trunc('milliseconds', now());
    update contacts set created_at = date_trunc('milliseconds', created_at) where created_at <> date_trunc('milliseconds', created_at);
  `,
  );
}
