// Fixtures of the bad-input catalogue (../shared/reliability/bad-inputs.md): workspaces A and B,
// each with every kind of credential, and `expectNoChange`, the check implied by every refusal.
// Credentials are written straight to the store (signing up hashes a password with scrypt at
// 128 MiB, seconds per workspace on a busy machine, and is not what these tests check).
import { expect } from 'vitest';
import { sql, type Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { loginTenant, type LoginTenant } from '../unit/messaging/operations/support.js';
import { connectBearer, connectClient } from '../support/connect.js';
import { elapse } from '../support/eventually.js';
import { until } from './inbound.js';

export const PROBLEMS = 'https://chatapp.example/problems/';

export interface Workspace extends LoginTenant {
  /** `Authorization` value of an owner session (Account API). */
  owner: string;
  /** `Authorization` value of a Connect access token with all four scopes. */
  connect: string;
  /** `Authorization` value (HTTP Basic) of a confidential Connect client the workspace registered. */
  client: string;
}

/** One workspace: owner session, Messaging key, Login app on a sandbox number, Connect bearer. */
export async function workspace(app: FastifyInstance): Promise<Workspace> {
  const t = await loginTenant(app);
  const { token } = await issueOwnerToken(app.platform, { workspaceId: t.workspaceId, ownerId: t.ownerId });
  const client = (await connectClient(app, t.workspaceId)).basic;
  return { ...t, owner: `Bearer ${token}`, connect: `Bearer ${await connectBearer(app, t.workspaceId)}`, client };
}

export async function workspaces(app: FastifyInstance): Promise<{ a: Workspace; b: Workspace }> {
  return { a: await workspace(app), b: await workspace(app) };
}

/** Row counts of every table of the store (both workspaces, the outbox and the audit rows included). */
export async function rowCounts(db: Kysely<any>): Promise<Record<string, number>> {
  const tables = await sql<{
    name: string;
  }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`.execute(db);
  const out: Record<string, number> = {};
  for (const { name } of tables.rows) {
    if (name.startsWith('kysely_')) continue;
    const r = await sql<{ n: string }>`select count(*) as n from ${sql.table(name)}`.execute(db);
    out[name] = Number(r.rows[0]!.n);
  }
  return out;
}

/** A counter outside the store that must not move either (fake provider calls, receiver hits, stream events). */
export type Probe = () => number | Promise<number>;

/**
 * Runs `act` and asserts that no table changed size and no probe moved: the no-change check
 * of every refusal. Tables that change on reads by design (rate-limit buckets, sign-in
 * throttles) are named in `ignore`, with the reason at the call site.
 */
export async function expectNoChange<T>(
  app: FastifyInstance,
  act: () => Promise<T>,
  { probes = {}, ignore = [] }: { probes?: Record<string, Probe>; ignore?: string[] } = {},
): Promise<T> {
  const snapshot = async () => {
    const rows = await rowCounts(app.platform.store.db);
    for (const t of ignore) delete rows[t];
    const probed: Record<string, number> = {};
    for (const [name, probe] of Object.entries(probes)) probed[name] = await probe();
    return { rows, probed };
  };
  // Work scheduled by a request (outbox, events, the automation's dispatch of an accepted inbound
  // message) runs on later turns of the loop: an earlier request's settles before the first
  // snapshot, so that it is not counted against this one, and this one's before the second.
  const settle = () => elapse(20, 'absence: work a request schedules has no event saying it is over');
  await settle();
  const before = await snapshot();
  const result = await act();
  await settle();
  expect(await snapshot()).toEqual(before);
  return result;
}

/** Asserts an RFC 9457 problem of `type` (short name) and `status`, with no internals in it. */
export function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, type: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body);
  expect(body.type).toBe(`${PROBLEMS}${type}`);
  expect(body.status).toBe(status);
  expectNoLeak(res.body);
  return body;
}

/** No stack, SQL, file path or module name in a body. */
export function expectNoLeak(text: string) {
  expect(text).not.toMatch(/\n\s+at |node_modules|\.ts:\d|\/work\/|SELECT |INSERT |syntax error|duplicate key|violates/i);
}

/**
 * Waits until automation has claimed every inbound message: its dispatch runs after the message is
 * stored (NOTIFY on PostgreSQL) and would otherwise land inside a later no-change window. Call it
 * after making inbound messages through the pipeline (sandbox, signed webhook) in a file that then
 * checks that nothing changed.
 */
export function inboundSettled(app: FastifyInstance): Promise<boolean> {
  const db = app.platform.store.db;
  const count = async (q: Promise<{ n: string | number | bigint }>) => Number((await q).n);
  return until(
    async () =>
      (await count(
        db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('direction', '=', 'inbound')
          .executeTakeFirstOrThrow(),
      )) ===
      (await count(
        db
          .selectFrom('automation_inbound_claims')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('instance_id', 'is not', null)
          .executeTakeFirstOrThrow(),
      )),
    Boolean,
    5_000,
  );
}
