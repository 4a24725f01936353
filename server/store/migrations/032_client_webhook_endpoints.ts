// Client-level webhook endpoints: a Connect client's own endpoints (api `connect_client`), kept
// in the webhook endpoint table under the workspace that registered the client, so the outbox,
// delivery log, redelivery and rotation serve them unchanged. `client_id` names the client; they
// go with it when it is deleted. A grant records why it ended, for `grant.revoked`.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table webhook_endpoints add column client_id text references connect_clients(id) on delete cascade;
    create index webhook_endpoints_client on webhook_endpoints(client_id, created_at desc) where client_id is not null;
    alter table connect_grants add column revoke_reason text;
  `,
  );
}
