// Digests of API keys replaced by a rotation (Messaging keys, Login app keys) or gone with their
// Login app. Rotation overwrites a key's digest, so without these the old value would be a
// credential nobody knows, and its 401s would count against the caller's IP instead of the key
// and its workspace (server/auth/auth-failures.ts, bad-inputs K10). Only the keyed digest is kept,
// as for live keys; the rows go with their workspace.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table retired_credentials (
      digest text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      kind text not null,
      retired_at timestamptz not null
    );
    create index retired_credentials_workspace on retired_credentials(workspace_id);
  `,
  );
}
