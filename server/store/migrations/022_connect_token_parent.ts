// The refresh token a token pair was issued from (null for pairs from a code). The refresh grace
// period (server/apis/connect/oauth/token.ts) needs it: a retired refresh token is answered again
// only while none of the refresh tokens issued from it has been used.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table connect_tokens add column parent_id text;
    create index connect_tokens_parent on connect_tokens(parent_id) where parent_id is not null;
  `,
  );
}
