// Durable waits: a delay fires after a restart (a second app on the same store), an ask's
// timeout takes the timeout branch, and with two instances on one PostgreSQL each timer fires
// once (PGlite has one connection, where instances cannot race: skipped there).
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { build } from '#test/helper.js';
import { openStore } from '#server/store/db.js';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { recordSends } from '../campaigns/support.js';
import { createFlow, executions, inboundText, outbound, templateId, until, workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

const env = { SECRET_KEY: 'automation-timers-share-this-secret-key-0123456789', AUTOMATION_POLL_MS: '200', RATE_LIMIT_IP_PER_MINUTE: '10000' };

const delayed = (tpl: string, seconds: number) => ({
  triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
  nodes: [
    { id: 'wait', type: 'delay', parameters: { duration: seconds, unit: 'seconds' } },
    { id: 'tpl', type: 'send_template', parameters: { template_id: tpl, language: 'en_US' } },
  ],
  connections: [
    { from_node: 'any', to_node: 'wait' },
    { from_node: 'wait', to_node: 'tpl' },
  ],
});

it('A-7 a delay fires after a restart: the first app closes while the run waits, a second app on the same store sends once', async () => {
  const store = await openTestStore();
  try {
    const first = await build({ env, overrides: { store } });
    const w = await workspace(first);
    const flow = await createFlow(first, w, delayed(await templateId(first, w.workspaceId, 'welcome_offer'), 3));
    const phone = '+4915112340003';
    await inboundText(first, w, phone, 'hello');
    const waiting = await until(async () => (await executions(first, flow.id)).find((e) => e.status === 'waiting'), 10_000, 'the wait');
    expect(waiting.fire_at).not.toBeNull();
    await first.close();
    expect(await outbound(first, phone)).toHaveLength(0);

    const second = await build({ env, overrides: { store } });
    const done = await until(async () => (await executions(second, flow.id)).find((e) => e.status === 'completed'), 20_000, 'completion after restart');
    expect(new Date(done.finished_at!).getTime()).toBeGreaterThanOrEqual(new Date(waiting.fire_at!).getTime());
    const sent = await outbound(second, phone);
    expect(sent.map((m) => m.type)).toEqual(['template']);
    const steps = await second.platform.store.db
      .selectFrom('automation_steps')
      .select(['node_id', 'status', 'port'])
      .where('execution_id', '=', done.id)
      .orderBy('seq')
      .execute();
    expect(steps).toEqual([
      { node_id: 'any', status: 'completed', port: 'out' },
      { node_id: 'wait', status: 'completed', port: 'out' },
      { node_id: 'tpl', status: 'completed', port: 'out' },
    ]);
    await second.close();
  } finally {
    await store.close();
  }
}, 90_000);

it('A-8 an ask without a reply takes the timeout branch when its timer fires', async () => {
  const app = await build({ env });
  const w = await workspace(app);
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
    nodes: [
      { id: 'ask', type: 'ask', parameters: { question: 'Still there?', timeout_minutes: 1 } },
      { id: 'late', type: 'send_text', parameters: { text: 'No answer, closing.' } },
      { id: 'answered', type: 'send_text', parameters: { text: 'Thanks!' } },
    ],
    connections: [
      { from_node: 'any', to_node: 'ask' },
      { from_node: 'ask', from_port: 'timeout', to_node: 'late' },
      { from_node: 'ask', from_port: 'reply', to_node: 'answered' },
    ],
  });
  const phone = '+4915112340004';
  await inboundText(app, w, phone, 'hi');
  const waiting = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'waiting'), 10_000, 'the wait');
  expect(new Date(waiting.fire_at!).getTime() - new Date(waiting.started_at).getTime()).toBeGreaterThanOrEqual(59_000);
  // The minute passes: the timer row is due now.
  await app.platform.store.db
    .updateTable('automation_executions')
    .set({ fire_at: new Date(Date.now() - 1000) })
    .where('id', '=', waiting.id)
    .execute();
  await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'the timeout branch');
  expect((await outbound(app, phone)).map((m) => (m.content as { text: string }).text)).toEqual(['Still there?', 'No answer, closing.']);
}, 60_000);

it('A-15 a run whose instance died mid-node is re-taken after its lease and finishes; executions page', async () => {
  const app = await build({ env });
  const w = await workspace(app);
  const db = app.platform.store.db;
  const flow = await createFlow(app, w, delayed(await templateId(app, w.workspaceId, 'welcome_offer'), 600));
  for (const phone of ['+4915112340012', '+4915112340013']) await inboundText(app, w, phone, 'hello');
  const runs = await until(
    async () => {
      const all = await executions(app, flow.id);
      return all.length === 2 && all.every((e) => e.status === 'waiting') && all;
    },
    10_000,
    'two waits',
  );
  // The first run's timer fired on an instance that then died holding the lease.
  await db
    .updateTable('automation_executions')
    .set({
      status: 'running',
      leased_by: 'dead-instance',
      lease_until: new Date(Date.now() - 1000),
      resume: JSON.stringify({ kind: 'timeout' }),
      fire_at: null,
    })
    .where('id', '=', runs[0]!.id)
    .execute();
  const done = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'the re-taken run');
  expect(done.id).toBe(runs[0]!.id);
  // The two inbound messages may start their runs in either order: the re-taken run is the
  // one whose contact gets the template.
  const { phone } = await db.selectFrom('contacts').select('phone').where('id', '=', runs[0]!.contact_id).executeTakeFirstOrThrow();
  expect(await outbound(app, phone)).toHaveLength(1);
  expect(await outbound(app, phone === '+4915112340012' ? '+4915112340013' : '+4915112340012')).toHaveLength(0);

  const call = (url: string) => app.inject({ method: 'GET', url, headers: { 'x-api-key': w.key } });
  const page1 = (await call(`/api/automation/${flow.id}/executions?limit=1`)).json();
  expect(page1).toMatchObject({ has_more: true });
  const page2 = (await call(`/api/automation/${flow.id}/executions?limit=1&cursor=${encodeURIComponent(page1.next_cursor)}`)).json();
  expect(page2).toMatchObject({ has_more: false, next_cursor: null });
  expect(new Set([page1.data[0].id, page2.data[0].id])).toEqual(new Set(runs.map((r) => r.id)));
  const waiting = (await call(`/api/automation/${flow.id}/executions?status=waiting`)).json().data;
  expect(waiting).toEqual([
    expect.objectContaining({ id: runs[1]!.id, current_node_id: 'wait', resume_at: new Date(runs[1]!.fire_at!).toISOString(), finished_at: null }),
  ]);
  expect(waiting[0].steps.at(-1)).toMatchObject({ node_id: 'wait', status: 'waiting', finished_at: null, duration_ms: null });
}, 60_000);

describe.skipIf(!onPostgres)('two instances on one PostgreSQL (skipped on PGlite: one connection cannot race)', () => {
  it('A-9 each of 12 delays fires exactly once across two instances', async () => {
    const storeA = await openTestStore();
    const storeB = await openStore({ databaseUrl: storeA.url! });
    let a: FastifyInstance | undefined;
    let b: FastifyInstance | undefined;
    try {
      a = await build({ env, overrides: { store: storeA } });
      b = await build({ env, overrides: { store: storeB } });
      const w = await workspace(a);
      const flow = await createFlow(a, w, delayed(await templateId(a, w.workspaceId, 'welcome_offer'), 2));
      const recA = recordSends(a.platform.provider('sandbox'));
      const recB = recordSends(b.platform.provider('sandbox'));
      for (let i = 0; i < 12; i++) await inboundText(a, w, `+49151123410${String(i).padStart(2, '0')}`, 'hello');
      await until(async () => (await executions(a!, flow.id)).filter((e) => e.status === 'completed').length === 12, 40_000, '12 completions');
      await elapse(1000, 'absence: a duplicate send by the other instance has no event to wait on');
      const all = [...recA.sends, ...recB.sends];
      expect(all).toHaveLength(12);
      expect(new Set(all.map((s) => s.to)).size).toBe(12);
      const runs = await executions(a, flow.id);
      expect(runs).toHaveLength(12);
      const steps = await a.platform.store.db.selectFrom('automation_steps').select('node_id').where('node_id', '=', 'tpl').execute();
      expect(steps).toHaveLength(12);
    } finally {
      await a?.close();
      await b?.close();
      await storeB.close();
      await storeA.close();
    }
  }, 120_000);
});
