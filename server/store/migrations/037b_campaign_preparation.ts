// Campaigns prepared by the worker (docs/scale.md): an audience larger than a request should
// hold is inserted as recipients in chunks, in contact id order, while the campaign is
// `preparing`. `audience_count`: the audience counted when sending was asked for (the goal of the
// preparation); `prepared_through`: the last contact id inserted, where the next chunk starts.
// contacts(workspace_id, id) serves those chunks.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table campaigns add column audience_count integer;
    alter table campaigns add column prepared_through text;
    create index campaigns_preparing on campaigns(created_at) where status = 'preparing';
    create index campaigns_cancelled on campaigns(finished_at) where status = 'cancelled';
    create index contacts_workspace_id on contacts(workspace_id, id);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop index contacts_workspace_id, campaigns_cancelled, campaigns_preparing;
    alter table campaigns drop column prepared_through, drop column audience_count;
  `,
  );
}
