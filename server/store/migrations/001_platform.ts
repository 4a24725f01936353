// Platform core: workspaces and owners, API keys, the webhook outbox and its delivery log,
// business accounts and numbers, contacts and messages (what the inbound webhook writes).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table workspaces (
      id text primary key,
      name text not null,
      slug text not null unique,
      plan text not null default 'free',
      login_session_cap integer not null default 1000,
      created_at timestamptz not null default now()
    );

    create table owners (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      email text not null unique,
      name text not null,
      password_hash text not null,
      role text not null default 'owner',
      created_at timestamptz not null default now()
    );
    create index owners_workspace on owners(workspace_id);

    create table api_keys (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      kind text not null,
      scopes text[] not null,
      prefix text not null,
      digest text not null unique,
      created_at timestamptz not null default now(),
      last_used_at timestamptz,
      expires_at timestamptz,
      revoked_at timestamptz
    );
    create index api_keys_workspace on api_keys(workspace_id, created_at desc);

    -- The durable outbox: one row per (event, endpoint), written in the transaction that
    -- caused the event; workers lease rows with FOR UPDATE SKIP LOCKED.
    create table outbox (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      endpoint_kind text not null,
      endpoint_id text not null,
      event_id text not null,
      event_type text not null,
      payload text not null,
      status text not null default 'pending',
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      lease_until timestamptz,
      leased_by text,
      last_status_code integer,
      last_error text,
      created_at timestamptz not null default now(),
      finished_at timestamptz,
      unique (event_id, endpoint_id)
    );
    create index outbox_due on outbox(next_attempt_at) where status = 'pending';
    create index outbox_endpoint on outbox(endpoint_id, created_at desc);

    create table delivery_attempts (
      id text primary key,
      outbox_id text not null references outbox(id) on delete cascade,
      attempt integer not null,
      started_at timestamptz not null,
      duration_ms integer not null,
      status_code integer,
      response_excerpt text,
      error text
    );
    create index delivery_attempts_outbox on delivery_attempts(outbox_id, attempt);

    create table business_accounts (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      kind text not null,
      provider_waba_id text not null,
      name text not null,
      access_token_enc text,
      webhooks_subscribed_at timestamptz,
      created_at timestamptz not null default now(),
      unique (workspace_id, provider_waba_id)
    );

    create table phone_numbers (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      provider_phone_number_id text not null unique,
      display_phone_number text not null,
      verified_name text not null,
      status text not null default 'CONNECTED',
      quality_rating text not null default 'GREEN',
      messages_per_second integer not null default 80,
      created_at timestamptz not null default now()
    );
    create index phone_numbers_workspace on phone_numbers(workspace_id);

    create table contacts (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      phone text not null,
      name text,
      email text,
      last_inbound_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (workspace_id, phone)
    );

    create table messages (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      direction text not null,
      type text not null,
      content jsonb not null,
      provider_message_id text,
      status text not null,
      error jsonb,
      created_at timestamptz not null default now(),
      status_at timestamptz not null default now()
    );
    create unique index messages_provider_id on messages(provider_message_id) where provider_message_id is not null;
    create index messages_contact on messages(workspace_id, contact_id, created_at desc);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table messages, contacts, phone_numbers, business_accounts, delivery_attempts, outbox, api_keys, owners, workspaces');
}
