// The provider inbox's lanes: a delivery that carries inbound messages (a customer writing, a
// LOGIN to verify) is claimed before deliveries of statuses only, so a sign-in never waits behind
// a campaign's thousands of statuses (server/apis/messaging/provider/inbox.ts). Lane 0: messages
// (and rows stored before lanes, or by an instance that does not set one); lane 1: statuses only.
// Claims read the due rows in (lane, seq) order; the oldest by seq (the metrics' age) keeps
// provider_deliveries_due.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table provider_deliveries add column lane smallint not null default 0;
    create index provider_deliveries_lane_due on provider_deliveries (lane, seq) where failed_at is null;
    `,
  );
}
