// Login apps as OpenID Connect providers: each app's registered redirect URIs and client type,
// the authorization requests of its hosted sign-in page (with the single-use code each one ends
// in) and the access tokens of its userinfo endpoint. Codes and tokens are kept as keyed digests.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table login_apps add column oidc_redirect_uris text[] not null default '{}';
    alter table login_apps add column oidc_client_type text not null default 'confidential';
    create table login_oidc_requests (
      id text primary key,
      app_id text not null references login_apps(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      browser_digest text not null,
      redirect_uri text not null,
      state text,
      nonce text,
      code_challenge text,
      scopes text[] not null,
      session_id text references login_sessions(id) on delete set null,
      code_digest text unique,
      code_expires_at timestamptz,
      code_used_at timestamptz,
      phone text,
      name text,
      amr text[],
      auth_time timestamptz,
      created_at timestamptz not null,
      expires_at timestamptz not null
    );
    create index login_oidc_requests_session on login_oidc_requests (session_id);
    create index login_oidc_requests_expires on login_oidc_requests (expires_at);
    create table login_oidc_tokens (
      id text primary key,
      digest text not null unique,
      app_id text not null references login_apps(id) on delete cascade,
      request_id text not null references login_oidc_requests(id) on delete cascade,
      sub text not null,
      phone text not null,
      name text,
      scopes text[] not null,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      created_at timestamptz not null
    );
    `,
  );
}
