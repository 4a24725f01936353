// The "done means": a real inbound message drives a flow end to end in the sandbox:
// trigger → ask → wait → reply → condition → tag → template, every step recorded.
import { beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { addTag, api, createFlow, executions, inboundButton, inboundText, outbound, templateId, until, workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

// One app: each test has its own workspace, flow and customer.
let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

const graph = (tagVip: string, tagLead: string, tpl: string) => ({
  triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['book'], match: 'contains' } }],
  nodes: [
    {
      id: 'ask_day',
      type: 'ask',
      parameters: {
        question: 'Which day, {{contact.name}}?',
        expect: 'date',
        save_as: 'day',
        save_to_field: 'name',
        timeout_minutes: 60,
        retry_text: 'Please write a date like 2026-12-01.',
      },
    },
    { id: 'vip', type: 'condition', parameters: { rules: [{ subject: 'tag', tag_id: tagVip, operator: 'has_tag' }] } },
    { id: 'tag_lead', type: 'add_tag', parameters: { tag_id: tagLead } },
    {
      id: 'confirm',
      type: 'send_template',
      parameters: { template_id: tpl, language: 'en_US', body_variables: ['{{vars.day}}', 'soon', 'today'], header_variables: ['A1'] },
    },
    { id: 'done', type: 'end', parameters: {} },
  ],
  connections: [
    { from_node: 'kw', to_node: 'ask_day' },
    { from_node: 'ask_day', from_port: 'reply', to_node: 'vip' },
    { from_node: 'vip', from_port: 'true', to_node: 'confirm' },
    { from_node: 'vip', from_port: 'false', to_node: 'tag_lead' },
    { from_node: 'tag_lead', to_node: 'confirm' },
    { from_node: 'confirm', to_node: 'done' },
  ],
});

it('A-1 inbound keyword → ask → invalid answer retried → reply → condition → tag → template, recorded step by step', async () => {
  const w = await workspace(app);
  const db = app.platform.store.db;
  const vip = await addTag(app, w.workspaceId, 'vip');
  const lead = await addTag(app, w.workspaceId, 'lead');
  const flow = await createFlow(app, w, graph(vip, lead, await templateId(app, w.workspaceId, 'order_shipped')));
  const phone = '+4915112345678';

  const first = await inboundText(app, w, phone, 'I want to BOOK a table');
  const waiting = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'waiting'), 10_000, 'the run to wait');
  expect(waiting.current_node_id).toBe('ask_day');
  expect(waiting.trigger_message_id).toBe(first.messageId);
  const named = await app.platform.store.db.selectFrom('contacts').select('name').where('id', '=', waiting.contact_id).executeTakeFirstOrThrow();
  expect((await outbound(app, phone)).map((m) => (m.content as { text: string }).text)).toEqual([`Which day, ${named.name ?? ''}?`]);

  await inboundText(app, w, phone, 'some day soon');
  await until(async () => (await outbound(app, phone)).length === 2, 10_000, 'the retry text');
  expect((await executions(app, flow.id))[0]!.status).toBe('waiting');

  await inboundText(app, w, phone, '2026-12-01');
  const done = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'completion').catch(async (e) => {
    console.log(
      JSON.stringify(await executions(app, flow.id)),
      JSON.stringify(await db.selectFrom('automation_steps').selectAll().execute()),
      JSON.stringify(await outbound(app, phone)),
    );
    throw e;
  });
  const sent = await outbound(app, phone);
  expect(sent.map((m) => m.type)).toEqual(['text', 'text', 'template']);
  expect(sent[2]!.content).toMatchObject({ template: { name: 'order_shipped' } });
  const contactTags = await db.selectFrom('contact_tags').select('tag_id').where('contact_id', '=', done.contact_id).execute();
  expect(contactTags.map((t) => t.tag_id)).toEqual([lead]);
  const contact = await db.selectFrom('contacts').select('name').where('id', '=', done.contact_id).executeTakeFirstOrThrow();
  expect(contact.name).toBe('2026-12-01'); // save_to_field

  const listed = await api(app, w.key)('GET', `/api/automation/${flow.id}/executions`);
  expect(listed.statusCode).toBe(200);
  const [execution] = listed.json().data;
  expect(execution).toMatchObject({
    status: 'completed',
    flow_version: 1,
    trigger_id: 'kw',
    current_node_id: null,
    resume_at: null,
    error: null,
    steps_truncated: false,
  });
  expect(execution.steps.map((s: { node_id: string; port: string }) => `${s.node_id}:${s.port}`)).toEqual([
    'kw:out',
    'ask_day:reply',
    'vip:false',
    'tag_lead:out',
    'confirm:out',
    'done:null',
  ]);
  expect(execution.steps[4].message_id).toBe(sent[2]!.id);
  expect(execution.duration_ms).toBeGreaterThanOrEqual(0);

  // The next message of the contact starts nothing (no keyword) and resumes nothing (the run ended).
  await inboundText(app, w, phone, 'thanks');
  await elapse(300, 'absence: a message that starts nothing changes nothing to wait on');
  expect(await executions(app, flow.id)).toHaveLength(1);
}, 90_000);

it('A-2 button_reply trigger starts on a click; an inactive flow does not trigger', async () => {
  const w = await workspace(app);
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'btn', type: 'button_reply', parameters: { button_ids: ['yes_book'] } }],
    nodes: [{ id: 'hi', type: 'send_text', parameters: { text: 'You chose {{trigger.text}}' } }],
    connections: [{ from_node: 'btn', to_node: 'hi' }],
  });
  const phone = '+4915112340001';
  await inboundText(app, w, phone, 'hello'); // opens the window, matches nothing
  await inboundButton(app, w, phone, 'yes_book', 'Yes, book');
  await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'completion');
  expect((await outbound(app, phone)).map((m) => (m.content as { text: string }).text)).toEqual(['You chose Yes, book']);

  const off = await api(app, w.key)('PATCH', `/api/automation/${flow.id}/toggle`, { active: false });
  expect(off.json().status).toBe('inactive');
  await inboundButton(app, w, phone, 'yes_book', 'Yes, book');
  await elapse(400, 'absence: an inactive flow must not resume, with no event to wait on');
  expect(await executions(app, flow.id)).toHaveLength(1);
}, 90_000);
