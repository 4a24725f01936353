// Issue 41, part B. Opt-out settings: the keyword lists may stay the locale's defaults (null),
// and an automatic confirmation per workspace (texts null: the locale's default text). Flows get
// an explicit trigger priority. History that erasure must keep: campaign recipient rows lose
// their contact and number instead of being deleted (their counts stay), and the messages an
// erased contact was sent are tallied per billing month so usage stays as it was.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table opt_out_settings
      alter column opt_out_keywords drop not null,
      alter column opt_in_keywords drop not null,
      add column confirmation boolean not null default false,
      add column opt_out_confirmation text,
      add column opt_in_confirmation text;

    alter table automation_flows add column priority integer not null default 0;

    alter table campaign_recipients
      alter column contact_id drop not null,
      alter column phone drop not null,
      drop constraint campaign_recipients_contact_id_fkey,
      add constraint campaign_recipients_contact_id_fkey foreign key (contact_id) references contacts(id) on delete set null;

    -- Messages the provider accepted for contacts since erased, per workspace and UTC month.
    create table message_usage_erased (
      workspace_id text not null references workspaces(id) on delete cascade,
      period_start timestamptz not null,
      messages integer not null,
      primary key (workspace_id, period_start)
    );
    `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop table message_usage_erased;
    delete from campaign_recipients where contact_id is null;
    alter table campaign_recipients
      drop constraint campaign_recipients_contact_id_fkey,
      add constraint campaign_recipients_contact_id_fkey foreign key (contact_id) references contacts(id) on delete cascade,
      alter column contact_id set not null,
      alter column phone set not null;
    alter table automation_flows drop column priority;
    update opt_out_settings set opt_out_keywords = '["STOP"]' where opt_out_keywords is null;
    update opt_out_settings set opt_in_keywords = '["START"]' where opt_in_keywords is null;
    alter table opt_out_settings
      drop column confirmation, drop column opt_out_confirmation, drop column opt_in_confirmation,
      alter column opt_out_keywords set not null,
      alter column opt_in_keywords set not null;
    `,
  );
}
