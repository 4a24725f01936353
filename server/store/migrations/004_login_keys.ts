// Login verification tokens: the ES256 signing keys (private half sealed with the master key),
// the session's sealed token (status must answer the same token on every call, and ECDSA
// signatures are randomised, so it cannot be re-signed on demand), and an index for the plan's
// monthly session count per workspace.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table login_signing_keys (
      kid text primary key,
      private_jwk_enc text not null,
      public_jwk text not null,
      created_at timestamptz not null,
      retired_at timestamptz
    );
    -- One active key: instances that start together race to insert it and all but one lose.
    create unique index login_signing_keys_active on login_signing_keys((true)) where retired_at is null;

    alter table login_sessions add column verification_token_enc text;
    create index login_sessions_workspace_month on login_sessions(workspace_id, created_at);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop index login_sessions_workspace_month;
    alter table login_sessions drop column verification_token_enc;
    drop table login_signing_keys
  `,
  );
}
