// Messaging configuration and CRM: marketing-messages settings, tags, custom fields, segments,
// contact fields, and the connection state of business accounts and numbers.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    -- A disconnected account keeps its row (messages reference its numbers and must stay);
    -- connecting the same provider account again revives it.
    alter table business_accounts add column status text not null default 'active';
    alter table business_accounts add column last_synced_at timestamptz;
    alter table business_accounts add column disconnected_at timestamptz;

    alter table phone_numbers add column messaging_limit_tier text;
    alter table phone_numbers add column updated_at timestamptz not null default now();
    create index phone_numbers_account on phone_numbers(business_account_id);

    alter table contacts add column custom_fields jsonb not null default '{}';
    create index contacts_workspace_created on contacts(workspace_id, created_at desc, id desc);

    create table tags (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      color text,
      created_at timestamptz not null default now()
    );
    create unique index tags_workspace_name on tags(workspace_id, lower(name));

    create table contact_tags (
      contact_id text not null references contacts(id) on delete cascade,
      tag_id text not null references tags(id) on delete cascade,
      created_at timestamptz not null default now(),
      primary key (contact_id, tag_id)
    );
    create index contact_tags_tag on contact_tags(tag_id);

    -- options: the allowed values of a choice field (a JSON array), null for other types.
    create table custom_fields (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      key text not null,
      label text not null,
      type text not null,
      options jsonb,
      created_at timestamptz not null default now(),
      unique (workspace_id, key)
    );

    create table segments (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      description text,
      filter jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index segments_workspace_name on segments(workspace_id, lower(name));

    create table marketing_messages_settings (
      business_account_id text primary key references business_accounts(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      enabled boolean not null default true,
      product_policy text not null default 'CLOUD_API_FALLBACK',
      activity_sharing boolean,
      onboarding_status text not null default 'NOT_STARTED',
      onboarding_checked_at timestamptz,
      updated_at timestamptz not null default now()
    );
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop table marketing_messages_settings, segments, custom_fields, contact_tags, tags;
    alter table contacts drop column custom_fields;
    alter table phone_numbers drop column messaging_limit_tier, drop column updated_at;
    alter table business_accounts drop column status, drop column last_synced_at, drop column disconnected_at;
  `,
  );
}
