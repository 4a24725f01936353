// Bots and forms: question-and-answer chatbots with their trained pairs, keyword and schedule
// message bots with the last reply per contact (cooldowns, once per schedule period), quick
// replies (industry packs insert into it too), and forms with the provider Flow they became and
// the submissions received.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table chatbots (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete cascade,
      name text not null,
      status text not null,
      match_threshold double precision not null,
      fallback jsonb not null,
      trained_at timestamptz,
      -- the owner last given a chat by round robin (fallback assign_agent without agent_id)
      last_assigned_owner_id text,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index chatbots_listing on chatbots(workspace_id, business_account_id, created_at desc, id desc);

    -- question_key is the normalised question: a question is known once per chatbot.
    create table chatbot_qa_pairs (
      chatbot_id text not null references chatbots(id) on delete cascade,
      position integer not null,
      question_key text not null,
      question text not null,
      alternatives jsonb not null,
      answer text not null,
      primary key (chatbot_id, question_key)
    );
    create index chatbot_qa_pairs_order on chatbot_qa_pairs(chatbot_id, position);

    create table message_bots (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete cascade,
      name text not null,
      kind text not null,
      status text not null,
      keywords jsonb not null,
      match text,
      schedule jsonb,
      reply jsonb not null,
      cooldown_minutes integer not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index message_bots_listing on message_bots(workspace_id, business_account_id, created_at desc, id desc);

    create table message_bot_replies (
      message_bot_id text not null references message_bots(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      last_replied_at timestamptz not null,
      primary key (message_bot_id, contact_id)
    );

    -- Quick replies: one shortcut per workspace. Columns: id (qr_…), workspace_id, shortcut,
    -- title (nullable), text, created_at, updated_at.
    create table quick_replies (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      shortcut text not null,
      title text,
      text text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      unique (workspace_id, shortcut)
    );

    create table forms (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      name text not null,
      category text not null,
      title text not null,
      submit_label text not null,
      fields jsonb not null,
      provider_flow_id text not null,
      flow_status text not null,
      submission_count integer not null default 0,
      published_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      unique (business_account_id, name)
    );
    create index forms_listing on forms(workspace_id, business_account_id, created_at desc, id desc);
    create index forms_flow on forms(workspace_id, provider_flow_id);

    -- One row per inbound form response (message_id unique: a redelivery or a second instance
    -- stores nothing twice). answers: the field values by field name.
    create table form_submissions (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      form_id text not null references forms(id) on delete cascade,
      contact_id text not null references contacts(id) on delete cascade,
      message_id text not null unique,
      answers jsonb not null,
      created_at timestamptz not null
    );
    create index form_submissions_contact on form_submissions(contact_id, created_at desc);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table form_submissions, forms, quick_replies, message_bot_replies, message_bots, chatbot_qa_pairs, chatbots');
}
