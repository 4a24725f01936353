// The event stream looks a presented subscribe token up by its digest when it does not match the
// session asked for (another workspace's token answers 404, bad-inputs B1): an index keeps that
// refusal as cheap as the match.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create index login_sessions_subscribe_token on login_sessions(subscribe_token_digest);
  `,
  );
}
