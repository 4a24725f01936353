// Campaigns: durable sends with per-recipient state, and a send schedule per sender number that
// every server instance shares (the rate limiter, see server/apis/messaging/campaigns/rate.ts).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table campaigns (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      name text not null,
      status text not null,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      chatapp_phone_number text not null,
      waba_id text not null,
      audience jsonb not null,
      template jsonb not null,
      template_id text,
      rate_per_second integer not null,
      scheduled_at timestamptz,
      failure_reason text,
      total integer not null default 0,
      resent integer not null default 0,
      started_at timestamptz,
      finished_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index campaigns_listing on campaigns(workspace_id, created_at desc, id desc);
    create index campaigns_scheduled on campaigns(scheduled_at) where status = 'scheduled';
    create index campaigns_sending on campaigns(phone_number_id) where status = 'sending';

    -- One row per recipient, fixed when sending starts. state: queued, sending (leased),
    -- sent, delivered, read, failed, skipped. attempts counts provider calls; resends after a
    -- crash are counted on the campaign.
    create table campaign_recipients (
      id bigserial primary key,
      campaign_id text not null references campaigns(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      phone text not null,
      state text not null default 'queued',
      attempts integer not null default 0,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      leased_by text,
      message_id text,
      provider_message_id text,
      error jsonb,
      updated_at timestamptz not null default now(),
      unique (campaign_id, contact_id)
    );
    create index campaign_recipients_due on campaign_recipients(campaign_id, id) where state in ('queued', 'sending');
    create index campaign_recipients_message on campaign_recipients(message_id) where message_id is not null;
    create index campaign_recipients_state on campaign_recipients(campaign_id, state);

    -- The next free send slot of a number: sends are spaced 1/rate apart across all instances.
    create table campaign_send_slots (
      phone_number_id text primary key references phone_numbers(id) on delete cascade,
      next_slot_at timestamptz not null,
      paused_until timestamptz
    );
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table campaign_send_slots, campaign_recipients, campaigns');
}
