// Invite codes for SIGNUP=invite: issued by the server's operator (`npm run invite`), each good
// for one sign-up before it expires, and for one email when it names one. Only the keyed digest
// of the code is kept, as for API keys; the workspace that used it is recorded.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table signup_invites (
      id text primary key,
      code_digest text not null unique,
      email text,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      used_at timestamptz,
      used_by_workspace_id text references workspaces(id) on delete set null
    );
  `,
  );
}
