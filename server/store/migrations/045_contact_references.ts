// A contact's rows elsewhere, found by the contact. Erasing a contact (and the chats that go with
// it) looks up its messages, chats, campaign recipients, automation runs and bot replies by
// `contact_id`, and the foreign keys' own triggers do the same for every row deleted (a chat's
// funnel placements, a form's submissions likewise). The indexes
// those tables had lead with the workspace, the campaign or the bot, so each of those lookups read
// the whole table: erasing one contact of a workspace of a million (3 million messages) took 1.4 s.
// A test (test/unit/store/foreign-key-indexes.test.ts) keeps every such reference on an index.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create index messages_contact_id on messages(contact_id);
    create index chats_contact on chats(contact_id);
    create index campaign_recipients_contact on campaign_recipients(contact_id);
    create index automation_executions_contact on automation_executions(contact_id);
    create index automation_sequence_enrolments_contact on automation_sequence_enrolments(contact_id);
    create index message_bot_replies_contact on message_bot_replies(contact_id);
    create index kanban_placements_chat on kanban_placements(chat_id);
    create index form_submissions_form on form_submissions(form_id);
    `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop index messages_contact_id, chats_contact, campaign_recipients_contact, automation_executions_contact,
      automation_sequence_enrolments_contact, message_bot_replies_contact, kanban_placements_chat, form_submissions_form;
    `,
  );
}
