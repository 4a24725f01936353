// Connect OAuth options per client: access and refresh token lifetimes (null: the defaults),
// skipping the consent page for the workspace's own first-party clients, and clients created by
// dynamic registration (RFC 7591) with their registration access token (RFC 7592, a keyed
// digest). Registration is opened by initial access tokens the owner issues, none by default.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table connect_clients add column access_token_ttl_seconds integer;
    alter table connect_clients add column refresh_token_ttl_seconds integer;
    alter table connect_clients add column skip_consent boolean not null default false;
    alter table connect_clients add column registration_digest text;
    alter table connect_clients add column registration_metadata jsonb;
    create table connect_registration_tokens (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      digest text not null unique,
      prefix text not null,
      description text,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      last_used_at timestamptz,
      created_at timestamptz not null
    );
    create index connect_registration_tokens_workspace on connect_registration_tokens (workspace_id, created_at desc);
    `,
  );
}
