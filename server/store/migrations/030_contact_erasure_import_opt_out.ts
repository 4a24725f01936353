// Contacts complete: the opt-out state of a contact (when and how it opted out; opted in again
// clears it), the workspace's opt-out and opt-in keywords, campaigns' count of recipients left out
// because they opted out, the log of erasures (what was erased, never the data), and CSV import
// jobs with their progress and per-row errors.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    -- opt_out_source: keyword (the customer wrote one), api, import.
    alter table contacts add column opted_out_at timestamptz;
    alter table contacts add column opt_out_source text;

    -- Absent row: the default keywords (server/apis/messaging/contacts/opt-out-keywords.ts).
    create table opt_out_settings (
      workspace_id text primary key references workspaces(id) on delete cascade,
      opt_out_keywords jsonb not null,
      opt_in_keywords jsonb not null,
      updated_at timestamptz not null
    );

    alter table campaigns add column opted_out_skipped integer not null default 0;

    -- contact_id is the erased contact's random id (no personal data); counts: rows erased per kind.
    create table contact_erasures (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      contact_id text not null,
      erased_by text not null,
      counts jsonb not null,
      erased_at timestamptz not null
    );
    create index contact_erasures_workspace on contact_erasures(workspace_id, erased_at desc, id desc);

    -- status: validating, importing, completed, failed. errors: the first rows refused, with their line.
    create table contact_imports (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      status text not null,
      filename text,
      total_rows integer not null default 0,
      processed_rows integer not null default 0,
      created_count integer not null default 0,
      updated_count integer not null default 0,
      merged_count integer not null default 0,
      error_count integer not null default 0,
      errors jsonb not null default '[]',
      failure_reason text,
      created_at timestamptz not null,
      finished_at timestamptz
    );
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop table contact_imports, contact_erasures, opt_out_settings;
    alter table campaigns drop column opted_out_skipped;
    alter table contacts drop column opted_out_at, drop column opt_out_source;
  `,
  );
}
