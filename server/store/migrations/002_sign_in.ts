// Owner sign-in throttling: one row per failed attempt, per subject (an email's digest or an IP),
// so a sliding 15-minute window is a count over an index. Rows older than the window are pruned
// as failures are written.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table sign_in_failures (
      subject text not null,
      failed_at timestamptz not null
    );
    create index sign_in_failures_subject on sign_in_failures(subject, failed_at);
    create index sign_in_failures_failed_at on sign_in_failures(failed_at);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table sign_in_failures');
}
