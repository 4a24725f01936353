// Industry packs and operations: what each pack application created (so applying again finds
// it), kanban funnels with their stages and the chats placed in them, Google connect states,
// and the agent availability of workspace members.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table industry_pack_applications (
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      slug text not null,
      version text not null,
      first_applied_at timestamptz not null,
      last_applied_at timestamptz not null,
      primary key (workspace_id, business_account_id, slug)
    );

    -- One row per pack item created or adopted: flows and funnels are found again by pack key.
    create table industry_pack_items (
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      slug text not null,
      kind text not null,
      key text not null,
      resource_id text not null,
      created_at timestamptz not null,
      primary key (workspace_id, business_account_id, slug, kind, key)
    );

    create table kanban_funnels (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text references business_accounts(id) on delete cascade,
      name text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index kanban_funnels_workspace on kanban_funnels(workspace_id, created_at desc, id desc);

    create table kanban_stages (
      funnel_id text not null references kanban_funnels(id) on delete cascade,
      key text not null,
      name text not null,
      position integer not null,
      color text,
      primary key (funnel_id, key),
      unique (funnel_id, position)
    );

    -- A chat is in at most one stage of a funnel.
    create table kanban_placements (
      funnel_id text not null references kanban_funnels(id) on delete cascade,
      chat_id text not null references chats(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      stage_key text not null,
      entered_at timestamptz not null,
      primary key (funnel_id, chat_id),
      foreign key (funnel_id, stage_key) references kanban_stages(funnel_id, key) on delete cascade
    );
    create index kanban_placements_stage on kanban_placements(funnel_id, stage_key, entered_at desc);

    -- The state of a Google authorization request: looked up by its digest, the PKCE verifier sealed.
    create table google_connect_states (
      state_digest text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      code_verifier_enc text not null,
      redirect_uri text not null,
      scopes text not null,
      expires_at timestamptz not null,
      created_at timestamptz not null
    );
    create index google_connect_states_expiry on google_connect_states(expires_at);

    -- Members who take chats: owners and agents; round robin skips the unavailable ones.
    alter table owners add column available boolean not null default true;
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table owners drop column available;
    drop table google_connect_states, kanban_placements, kanban_stages, kanban_funnels, industry_pack_items, industry_pack_applications;
  `,
  );
}
