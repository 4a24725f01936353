// The W3C trace context (`traceparent`) of the request that queued a webhook delivery or stored a
// provider delivery, so that the work, done later by whichever instance's worker, is its own
// trace linked to that request (server/ops/tracing.ts). Null when tracing is off.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table outbox add column trace_context text;
    alter table provider_deliveries add column trace_context text;
    `,
  );
}
