// Login API: Login apps (own key and webhook secret), login sessions and their single-use
// verification tokens, receipts of the hosted webhook, and the platform's shared service number.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table login_apps (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      use_service_phone boolean not null default true,
      phone_number_id text references phone_numbers(id) on delete set null,
      webhook_destination text not null default 'none',
      production_webhook_url text,
      staging_webhook_url text,
      api_key_prefix text not null,
      api_key_digest text not null unique,
      webhook_secret_prefix text not null,
      webhook_secret_enc text not null,
      previous_webhook_secret_enc text,
      previous_webhook_secret_until timestamptz,
      provider_webhook_status text not null default 'not_needed',
      provider_webhook_error text,
      provider_webhook_code integer,
      provider_webhook_updated_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index login_apps_workspace on login_apps(workspace_id, created_at desc);

    create table login_sessions (
      id text primary key,
      app_id text not null references login_apps(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      login_code text not null,
      subscribe_token_digest text not null,
      status text not null default 'pending',
      expires_at timestamptz not null,
      verified_at timestamptz,
      phone text,
      profile_name text,
      message_id text,
      token_jti text unique,
      token_expires_at timestamptz,
      token_used_at timestamptz,
      created_at timestamptz not null
    );
    -- A login code is unique among the pending sessions of one number: the inbound LOGIN message
    -- names the session by (number, code).
    create unique index login_sessions_pending_code on login_sessions(phone_number_id, login_code) where status = 'pending';
    create index login_sessions_expiry on login_sessions(expires_at) where status = 'pending';
    create index login_sessions_app on login_sessions(app_id, created_at desc);

    create table login_session_events (
      id bigserial primary key,
      session_id text not null references login_sessions(id) on delete cascade,
      event text not null,
      created_at timestamptz not null default now()
    );
    create index login_session_events_session on login_session_events(session_id, id);

    create table hosted_webhook_receipts (
      id text primary key,
      app_id text not null references login_apps(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      event_id text not null,
      event_type text not null,
      payload jsonb not null,
      received_at timestamptz not null,
      unique (app_id, event_id)
    );
    create index hosted_webhook_receipts_app on hosted_webhook_receipts(app_id, received_at desc);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table hosted_webhook_receipts, login_session_events, login_sessions, login_apps');
}
