// The provider webhook's durable inbox: a signed, valid delivery is stored here and acknowledged
// once the insert committed, then processed from here (server/apis/messaging/provider/inbox.ts).
// A row is deleted in the same transaction as the delivery's effects, so what remains is work
// not done yet, work waiting for its next attempt (lease_until) and poison deliveries (failed_at,
// kept with their error). Leases are updated on every claim: pages are left half free so that
// update stays on its page (as the outbox's, migration 021).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table provider_deliveries (
      id text primary key,
      seq bigint generated always as identity,
      payload text not null,
      received_at timestamptz not null,
      attempts integer not null default 0,
      lease_until timestamptz,
      leased_by text,
      last_error text,
      failed_at timestamptz
    ) with (fillfactor = 50);
    create index provider_deliveries_due on provider_deliveries (seq) where failed_at is null;
  `,
  );
}
