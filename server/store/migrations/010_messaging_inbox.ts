// Messaging inbox and templates: chats (one per business number and customer, kept up to date on
// every message so the inbox lists without scanning `messages`), message columns the inbox needs,
// uploaded media, and message templates.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table message_templates (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      provider_template_id text,
      name text not null,
      language text not null,
      category text not null,
      status text not null default 'PENDING',
      components jsonb not null,
      rejected_reason text,
      quality_rating text,
      allow_category_change boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (business_account_id, name, language)
    );
    create index message_templates_workspace on message_templates(workspace_id, created_at desc, id desc);

    create table chats (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      last_message_id text,
      last_message_at timestamptz not null default now(),
      unread_count integer not null default 0,
      assigned_owner_id text references owners(id) on delete set null,
      assigned_at timestamptz,
      read_at timestamptz,
      created_at timestamptz not null default now(),
      unique (phone_number_id, contact_id)
    );
    create index chats_listing on chats(workspace_id, last_message_at desc, id desc);

    alter table messages add column chat_id text references chats(id) on delete set null;
    alter table messages add column template_id text;
    alter table messages add column reply_to_id text;
    alter table messages add column sent_at timestamptz;
    alter table messages add column delivered_at timestamptz;
    alter table messages add column read_at timestamptz;
    alter table messages add column failed_at timestamptz;
    create index messages_chat on messages(chat_id, created_at desc, id desc);

    create table uploaded_media (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete cascade,
      provider_media_id text not null,
      mime_type text not null,
      filename text,
      size_bytes integer not null,
      created_at timestamptz not null default now()
    );
    create index uploaded_media_workspace on uploaded_media(workspace_id, created_at desc);

    -- Idempotency-Key of sends: the first answer is kept 24 hours and replayed for the same body.
    create table send_idempotency (
      workspace_id text not null references workspaces(id) on delete cascade,
      key text not null,
      request_digest text not null,
      status_code integer,
      response jsonb,
      created_at timestamptz not null default now(),
      primary key (workspace_id, key)
    );
  `,
  );
}
