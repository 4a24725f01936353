// The statements of a sign-in (start, the LOGIN message, verification, status, the signed server
// webhook through the outbox) get PostgreSQL's generic plans on PGlite once they have run five
// times (server/store/pglite-statements.ts), so none is planned again on every message. A statement that compares a column to a parameter where
// a partial index wants a constant (`status = $3` against `where status = 'pending'`) never does:
// its generic plan cannot use the index. That was the code lookup of every LOGIN message and the
// automation's look for a run waiting on the sender's reply, which this test catches, and the
// outbox's claim, which only a larger backlog than this test's shows (the benchmark's did).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { startReceiver } from '#test/support/receiver.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { eventually } from '#test/support/eventually.js';

let app: FastifyInstance;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  app = await buildShared();
  receiver = await startReceiver();
}, 180_000);
afterAll(() => receiver?.close());

async function signIn(a: Awaited<ReturnType<typeof insertLoginApp>>, i: number) {
  const start = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': a.apiKey }, payload: {} });
  expect(start.statusCode, start.body).toBe(201);
  const { sessionId, loginCode } = start.json() as { sessionId: string; loginCode: string };
  await sendFromSandboxPhone(app, { phoneNumberId: a.numbers[0]!.id, from: `+1555010${String(1000 + i)}`, name: 'Ana', text: `LOGIN ${loginCode}` });
  await eventually(
    async () => (await app.inject({ url: `/v1/auth/chatapp/status/${sessionId}`, headers: { 'x-api-key': a.apiKey } })).json().status === 'success',
    { within: 3_000, what: `session ${sessionId} verified`, app },
  );
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('plan cache on the sign-in path (PGlite prepared statements)', () => {
  it('after twelve sign-ins no statement has been planned on every one of its runs', async () => {
    const a = await insertLoginApp(app, { webhookUrl: receiver.url });
    for (let i = 0; i < 12; i++) await signIn(a, i);
    await eventually(() => receiver.received.length >= 12, { within: 3_000, what: 'twelve webhooks', app });
    expect(receiver.received).toHaveLength(12);
    const { rows } = await sql<{ statement: string; custom_plans: string }>`
      select statement, custom_plans from pg_prepared_statements where custom_plans > 5 and generic_plans = 0`.execute(app.platform.store.db);
    expect(rows.map((r) => `${r.custom_plans}× ${r.statement}`)).toEqual([]);
    // The lookup the message runs is among the statements that did get a generic plan.
    const lookup = await sql<{ generic_plans: string }>`
      select generic_plans from pg_prepared_statements where statement like 'select "s"."id", "s"."app_id", "s"."workspace_id"%from "login_sessions" as "s"%'`.execute(
      app.platform.store.db,
    );
    expect(lookup.rows).toHaveLength(1);
    expect(Number(lookup.rows[0]!.generic_plans)).toBeGreaterThan(0);
  }, 60_000);
});
