// testFlow checks each node as the live run will: a send_template node without the variables its
// template needs, or a start_form of a form no longer published, fails the dry run with the very
// error the live execution records. And answers read as people write them, live: a phone without
// `+` in the contact's country, a number that reads two ways asked again.
import { beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { api, createFlow, executions, inboundText, outbound, templateId, until, workspace } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

async function bothRuns(w: Awaited<ReturnType<typeof workspace>>, flowId: string, phone: string) {
  const dry = await api(app, w.key)('POST', `/api/automation/${flowId}/test`, { message: { type: 'text', text: 'go' }, contact: { contact_no: phone } });
  expect(dry.statusCode, dry.body).toBe(200);
  await inboundText(app, w, phone, 'go');
  const live = await until(
    async () => (await executions(app, flowId)).find((e) => e.status === 'failed' || e.status === 'completed'),
    10_000,
    'the live run to end',
  );
  return { dry: dry.json(), live };
}

it('a send_template node missing its variables: testFlow fails with the live run’s error', async () => {
  const w = await workspace(app);
  const tpl = await templateId(app, w.workspaceId, 'order_shipped'); // header {{1}}, body {{1}} {{2}} {{3}}
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['go'], match: 'exact' } }],
    nodes: [{ id: 'tpl', type: 'send_template', parameters: { template_id: tpl, language: 'en_US', body_variables: ['{{contact.name}}'] } }],
    connections: [{ from_node: 'kw', to_node: 'tpl' }],
  });
  const { dry, live } = await bothRuns(w, flow.id, '+4915112349001');
  expect(live.status).toBe('failed');
  expect(live.error).toMatchObject({ code: 'send_refused', node_id: 'tpl' });
  expect(dry).toMatchObject({ outcome: 'failed', error: live.error as object, messages: [] });
  expect(dry.steps.at(-1)).toMatchObject({ node_id: 'tpl', port: null, detail: (live.error as { message: string }).message });
});

it('a start_form of a form that is not published: testFlow fails with the live run’s error', async () => {
  const w = await workspace(app);
  const db = app.platform.store.db;
  const now = new Date();
  const form = {
    workspace_id: w.workspaceId,
    business_account_id: w.accountId,
    name: 'Intake',
    category: 'OTHER',
    title: 'Intake',
    submit_label: 'Send',
    fields: JSON.stringify([]),
    published_at: now,
    created_at: now,
    updated_at: now,
  };
  await db
    .insertInto('forms')
    .values({ ...form, id: `form_${w.workspaceId.slice(-12)}A`, provider_flow_id: `9${Date.now()}`, flow_status: 'PUBLISHED' })
    .execute();
  const published = await db.selectFrom('forms').select('provider_flow_id').where('workspace_id', '=', w.workspaceId).executeTakeFirstOrThrow();
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['go'], match: 'exact' } }],
    nodes: [{ id: 'form', type: 'start_form', parameters: { flow_id: published.provider_flow_id, body: 'Tell us more', cta: 'Open form' } }],
    connections: [{ from_node: 'kw', to_node: 'form' }],
  });
  // Deprecated after the flow was activated (activation checks it was published).
  await db.updateTable('forms').set({ flow_status: 'DEPRECATED' }).where('workspace_id', '=', w.workspaceId).execute();
  const { dry, live } = await bothRuns(w, flow.id, '+4915112349002');
  expect(live).toMatchObject({ status: 'failed', error: { code: 'send_refused', node_id: 'form' } });
  expect(dry).toMatchObject({ outcome: 'failed', error: live.error as object });
  expect(await outbound(app, '+4915112349002')).toHaveLength(0);
});

it('live: a phone without + is read in the contact’s country; a number that reads two ways is asked again', async () => {
  const w = await workspace(app);
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['go'], match: 'exact' } }],
    nodes: [
      { id: 'phone', type: 'ask', parameters: { question: 'Your other number?', expect: 'phone', save_as: 'other' } },
      { id: 'amount', type: 'ask', parameters: { question: 'How much?', expect: 'number', save_as: 'amount', retry_text: 'Which do you mean?' } },
      { id: 'echo', type: 'send_text', parameters: { text: '{{vars.other}} {{vars.amount}}' } },
    ],
    connections: [
      { from_node: 'kw', to_node: 'phone' },
      { from_node: 'phone', from_port: 'reply', to_node: 'amount' },
      { from_node: 'amount', from_port: 'reply', to_node: 'echo' },
    ],
  });
  const phone = '+351912009003';
  const texts = async () => (await outbound(app, phone)).map((m) => (m.content as { text?: string }).text);
  await inboundText(app, w, phone, 'go');
  await until(async () => (await texts()).length === 1, 10_000, 'the first question');
  await inboundText(app, w, phone, '912 000 004');
  await until(async () => (await texts()).length === 2, 10_000, 'the second question');
  await inboundText(app, w, phone, '250,000'); // 250 thousand, or 250 with three decimals, in pt-PT
  await until(async () => (await texts()).length === 3, 10_000, 'the retry');
  expect((await texts())[2]).toBe('Which do you mean?');
  await inboundText(app, w, phone, '250.000');
  await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'completion');
  // 250000, written back as pt-PT writes it (the phone as stored).
  expect((await texts()).at(-1)).toBe('+351912000004 250\u00a0000');
});

it('the node’s locale wins over the contact’s country: "250,000" is 250000 in en-US, asked again in pt-PT', async () => {
  const w = await workspace(app);
  const graph = (locale?: string) => ({
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['go'], match: 'exact' } }],
    nodes: [
      { id: 'amount', type: 'ask', parameters: { question: 'How much?', expect: 'number', save_as: 'amount', ...(locale ? { locale } : {}) } },
      { id: 'echo', type: 'send_text', parameters: { text: '{{vars.amount}}' } },
    ],
    connections: [
      { from_node: 'kw', to_node: 'amount' },
      { from_node: 'amount', from_port: 'reply', to_node: 'echo' },
    ],
  });
  const run = async (locale?: string) => {
    const flow = await createFlow(app, w, graph(locale), { status: 'inactive', name: `Amount ${locale ?? 'default'}` });
    const res = await api(app, w.key)('POST', `/api/automation/${flow.id}/test`, {
      message: { type: 'text', text: 'go' },
      contact: { contact_no: '+351912009004' },
      replies: [{ type: 'text', text: '250,000' }],
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const english = await run('en-US');
  expect(english).toMatchObject({ outcome: 'completed' });
  expect(english.steps.map((x: { detail: string }) => x.detail).join('\n')).toMatch(/reply "250000"/);
  // Read in the node's locale, written back in the contact's (pt-PT).
  expect(english.messages.at(-1).preview).toBe('250\u00a0000');
  const portuguese = await run();
  expect(portuguese).toMatchObject({ outcome: 'waiting', waiting_at: 'amount' });
  expect(portuguese.steps.map((x: { detail: string }) => x.detail).join('\n')).toMatch(/reads two ways in pt-PT/);
  // A locale that is not BCP 47 is refused when the flow is saved, naming the parameter.
  const bad = await api(app, w.key)('POST', '/api/automation', { name: 'Bad locale', waba_id: w.accountId, ...graph('portuguese') });
  expect(bad.statusCode).toBe(422);
  expect(JSON.stringify(bad.json().errors)).toContain('/body/nodes/0/parameters/locale');
});
