// Automation: flows (the graph of every saved version kept, so a waiting run resumes on the
// version it started with), executions with their steps, the durable waits (an execution's
// `fire_at`, leased with FOR UPDATE SKIP LOCKED), the once-only claim of each inbound message,
// and drip sequences with their enrolments (timers of the same kind).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table automation_flows (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete cascade,
      name text not null,
      description text,
      status text not null,
      version integer not null,
      last_execution_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index automation_flows_listing on automation_flows(workspace_id, updated_at desc, id desc);
    create index automation_flows_active on automation_flows(business_account_id) where status = 'active';

    create table automation_flow_versions (
      flow_id text not null references automation_flows(id) on delete cascade,
      version integer not null,
      graph jsonb not null,
      created_at timestamptz not null,
      primary key (flow_id, version)
    );

    -- status: running (leased by an instance until lease_until), waiting (wait_kind reply, form
    -- or delay; fire_at is the timeout or the end of the delay), completed, failed, cancelled.
    -- resume holds what the current node is entered with, so a run whose instance died is
    -- re-taken after its lease and goes on from current_node_id.
    create table automation_executions (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      flow_id text not null references automation_flows(id) on delete cascade,
      flow_version integer not null,
      contact_id text not null references contacts(id) on delete cascade,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      chat_id text,
      trigger_id text not null,
      trigger_message_id text,
      status text not null,
      current_node_id text,
      wait_kind text,
      wait_state jsonb,
      resume jsonb,
      vars jsonb not null default '{}',
      fire_at timestamptz,
      lease_until timestamptz,
      leased_by text,
      step_count integer not null default 0,
      error jsonb,
      started_at timestamptz not null,
      finished_at timestamptz
    );
    create index automation_executions_listing on automation_executions(flow_id, started_at desc, id desc);
    create index automation_executions_waiting on automation_executions(workspace_id, contact_id, phone_number_id) where status = 'waiting';
    create index automation_executions_due on automation_executions(fire_at) where status = 'waiting';
    create index automation_executions_leased on automation_executions(lease_until) where status = 'running';

    create table automation_steps (
      id bigserial primary key,
      execution_id text not null references automation_executions(id) on delete cascade,
      seq integer not null,
      node_id text not null,
      node_type text not null,
      status text not null,
      port text,
      message_id text,
      detail text,
      error jsonb,
      started_at timestamptz not null,
      finished_at timestamptz,
      unique (execution_id, seq)
    );

    -- One row per inbound message: the instance whose insert wins runs the responders.
    create table automation_inbound_claims (
      message_id text primary key,
      instance_id text not null,
      claimed_at timestamptz not null
    );
    create index automation_inbound_claims_age on automation_inbound_claims(claimed_at);

    create table automation_sequences (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete cascade,
      name text not null,
      status text not null,
      trigger jsonb not null,
      steps jsonb not null,
      stop_on_reply boolean not null default true,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index automation_sequences_listing on automation_sequences(business_account_id, created_at desc, id desc);

    -- status: active (next_step is due at fire_at), completed, stopped (a reply, or the sequence
    -- deactivated), failed.
    create table automation_sequence_enrolments (
      id text primary key,
      sequence_id text not null references automation_sequences(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      status text not null,
      next_step integer not null,
      fire_at timestamptz,
      lease_until timestamptz,
      leased_by text,
      error jsonb,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create unique index automation_enrolments_live on automation_sequence_enrolments(sequence_id, contact_id) where status = 'active';
    create index automation_enrolments_due on automation_sequence_enrolments(fire_at) where status = 'active';
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    'drop table automation_sequence_enrolments, automation_sequences, automation_inbound_claims, automation_steps, automation_executions, automation_flow_versions, automation_flows',
  );
}
