// Connect OAuth: clients and their redirect URIs, grants (an owner's consent for one client in
// one workspace), authorization codes, and access and refresh tokens.
//
// Codes, tokens and client secrets are stored only as keyed digests (lookup by digest, confirmed
// in constant time). A client belongs to the workspace that registered it, but any workspace's
// owner may consent to it: the grant, its codes and tokens belong to the consenting workspace.
// Deleting a client deletes its grants, codes and tokens with it (nothing it issued stays valid).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table connect_clients (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      client_type text not null,
      redirect_uris text[] not null,
      secret_prefix text,
      secret_digest text unique,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index connect_clients_workspace on connect_clients(workspace_id, created_at desc, id desc);

    -- One grant per (workspace, client) at a time: consenting again updates its scopes.
    create table connect_grants (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      client_id text not null references connect_clients(id) on delete cascade,
      owner_id text references owners(id) on delete set null,
      scopes text[] not null,
      status text not null default 'active',
      created_at timestamptz not null,
      updated_at timestamptz not null,
      last_used_at timestamptz,
      revoked_at timestamptz
    );
    create unique index connect_grants_active on connect_grants(workspace_id, client_id) where status = 'active';
    create index connect_grants_workspace on connect_grants(workspace_id, created_at desc, id desc);

    create table connect_codes (
      id text primary key,
      digest text not null unique,
      workspace_id text not null references workspaces(id) on delete cascade,
      client_id text not null references connect_clients(id) on delete cascade,
      grant_id text not null references connect_grants(id) on delete cascade,
      redirect_uri text not null,
      code_challenge text,
      scopes text[] not null,
      expires_at timestamptz not null,
      used_at timestamptz,
      created_at timestamptz not null
    );

    -- Access and refresh tokens. family_id is the code that started the chain: every token
    -- issued from that code, and from refresh tokens descended from it, shares it, so a reused
    -- code or retired refresh token revokes the whole chain in one statement.
    create table connect_tokens (
      id text primary key,
      kind text not null,
      digest text not null unique,
      workspace_id text not null references workspaces(id) on delete cascade,
      client_id text not null references connect_clients(id) on delete cascade,
      grant_id text not null references connect_grants(id) on delete cascade,
      family_id text not null,
      scopes text[] not null,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      rotated_at timestamptz,
      created_at timestamptz not null
    );
    create index connect_tokens_family on connect_tokens(family_id);
    create index connect_tokens_grant on connect_tokens(grant_id);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table connect_tokens, connect_codes, connect_grants, connect_clients');
}
