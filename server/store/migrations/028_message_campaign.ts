// The campaign that sent a message: campaign messages name their campaign (the contract's
// `Message.campaign_id`). Kept when the campaign is deleted, as its history; no foreign key so
// that deleting a campaign never rewrites the messages table.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table messages add column campaign_id text;
    create index messages_campaign on messages(campaign_id) where campaign_id is not null;
  `,
  );
}
