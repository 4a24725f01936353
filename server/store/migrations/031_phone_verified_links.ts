// Share links that open only for the recipient's phone: the reader verifies a number with a LOGIN
// message (a Login session of the workspace's "Verified links" app) and the reader session keeps
// the verified number, so that events carry it and unique readers count people.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table links add column require_phone_verification boolean not null default false;
    alter table reader_sessions add column verified_phone text;
    alter table login_apps add column purpose text not null default 'client';
  `,
  );
}
