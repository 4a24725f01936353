// Facts about the deployment itself. `key_check` is a digest made with the at-rest key when the
// database was first used: a server started with another SECRET_KEY refuses to start instead of
// failing later on every decryption (bad-inputs L7).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table platform_settings (
      name text primary key,
      value text not null
    );
  `,
  );
}
