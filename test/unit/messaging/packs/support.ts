// Shared steps of the pack and operations tests: applying a pack, and row counts of every table
// a pack writes (for the no-change checks of refusals).
import type { FastifyInstance } from 'fastify';
import type { Tenant } from '../inbox/support.js';
import { eventually as waitFor } from '#test/support/eventually.js';

export const PROBLEMS = 'https://chatapp.example/problems/';

export const apply = (app: FastifyInstance, t: Tenant, body: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/industry-packs/apply', headers: t.headers, payload: body });

export const CLINIC = { slug: 'dental-clinic', variables: { company_name: 'Smile Dental', city: 'Lisbon' } };

const TABLES = [
  'message_templates',
  'tags',
  'custom_fields',
  'quick_replies',
  'automation_flows',
  'automation_flow_versions',
  'kanban_funnels',
  'kanban_stages',
  'industry_pack_items',
  'industry_pack_applications',
] as const;

export async function packCounts(app: FastifyInstance): Promise<Record<string, number>> {
  const db = app.platform.store.db;
  const out: Record<string, number> = {};
  for (const table of TABLES)
    out[table] = Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return out;
}

/** Waits until `check` holds: bus events arrive asynchronously (test/support/eventually.ts). */
export function eventually<T>(check: () => Promise<T | undefined | null | false>, ms = 3000): Promise<T> {
  return waitFor(check, { within: ms }) as Promise<T>;
}
