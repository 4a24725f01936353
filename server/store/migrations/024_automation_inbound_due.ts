// An inbound message is recorded as due for automation in the transaction that stores it
// (instance_id null), and claimed by whichever instance gets to it first: on the `message.received`
// notification, or, when that notification was lost, by the sweep every instance runs at start,
// when its LISTEN connection is back, and periodically (automation/dispatcher.ts).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table automation_inbound_claims alter column instance_id drop not null;
    alter table automation_inbound_claims alter column claimed_at drop not null;
    alter table automation_inbound_claims add column received_at timestamptz;
    update automation_inbound_claims set received_at = claimed_at;
    alter table automation_inbound_claims alter column received_at set not null;
    drop index automation_inbound_claims_age;
    create index automation_inbound_claims_age on automation_inbound_claims(received_at);
    create index automation_inbound_claims_due on automation_inbound_claims(received_at) where instance_id is null;
  `,
  );
}
