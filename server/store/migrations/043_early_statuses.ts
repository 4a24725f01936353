// Statuses that overtake the message they are about. The campaign worker records the messages the
// provider accepted in batches after its calls, and the provider may report `delivered` or `read`
// before that batch commits (the sandbox phone does at once; Meta does under load). Such a status
// is kept here and applied when the message is recorded (provider/early-statuses.ts), instead of
// being dropped. Rows nobody claims (messages sent outside this server) are pruned after a day.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table provider_early_statuses (
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      wamid text not null,
      status text not null,
      payload jsonb not null,
      received_at timestamptz not null,
      primary key (phone_number_id, wamid, status)
    );
    create index provider_early_statuses_received on provider_early_statuses (received_at);
    `,
  );
}
