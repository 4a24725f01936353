// Fixtures of the CRM tests: a workspace with a Messaging key, and a JSON call helper.
import type { FastifyInstance } from 'fastify';
import { createKey, signUp } from '#test/unit/account/support.js';

export interface Tenant {
  workspaceId: string;
  key: string;
  owner: string;
  call(method: string, url: string, payload?: unknown): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
}

export async function tenant(app: FastifyInstance): Promise<Tenant> {
  const signed = await signUp(app);
  const key = (await createKey(app, signed.token)).secret;
  return {
    workspaceId: signed.workspace.id,
    key,
    owner: signed.token,
    async call(method, url, payload) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { 'x-api-key': key, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
      });
      return { status: res.statusCode, body: res.body ? res.json() : undefined, headers: res.headers };
    },
  };
}

export const PROBLEM = 'https://chatapp.example/problems/';

/** Row counts of the CRM tables, for no-change checks. */
export async function crmCounts(app: FastifyInstance) {
  const db = app.platform.store.db;
  const tables = ['contacts', 'tags', 'contact_tags', 'custom_fields', 'segments'] as const;
  const out: Record<string, number> = {};
  for (const t of tables)
    out[t] = Number(
      (
        await db
          .selectFrom(t)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return out;
}
