// The flow operations: catalogue, create/get/list/update/delete, toggle, executions listing,
// dry runs (which send and write nothing), and another workspace's ids answering 404.
import { beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { build, buildShared } from '#test/helper.js';
import { createKey, signUp } from '#test/unit/account/support.js';
import { catalogue } from '#server/apis/messaging/automation/catalog.js';
import { addTag, api, createFlow, executions, inboundText, templateId, until, workspace } from './support.js';

// One app for the tests that each work in workspaces of their own; A-6, which checks that a dry
// run writes nothing anywhere in the store, has its own.
let shared: FastifyInstance;
beforeAll(async () => {
  shared = await buildShared();
});

const simple = {
  triggers: [{ id: 'hello', type: 'keyword', parameters: { keywords: ['hi'] } }],
  nodes: [{ id: 'greet', type: 'send_text', parameters: { text: 'Hello {{contact.name}}' } }],
  connections: [{ from_node: 'hello', to_node: 'greet' }],
};

it('A-3 listNodeTypes serves the catalogue whose schemas the validator uses (from the contract)', async () => {
  const app = shared;
  const w = await workspace(app);
  const res = await api(app, w.key)('GET', '/api/automation/node-types');
  expect(res.statusCode).toBe(200);
  const body = res.json();
  expect(body.version).toBe(catalogue().version);
  expect(body.data.map((t: { type: string }) => t.type)).toEqual([
    'message_received',
    'keyword',
    'button_reply',
    'send_text',
    'send_media',
    'send_template',
    'send_buttons',
    'send_list',
    'ask',
    'condition',
    'set_field',
    'add_tag',
    'remove_tag',
    'delay',
    'http_request',
    'assign_agent',
    'start_form',
    'end',
  ]);
  const tag = body.data.find((t: { type: string }) => t.type === 'add_tag');
  expect(tag.parameters_schema).toMatchObject({ type: 'object', required: ['tag_id'], additionalProperties: false });
  expect(body.data.filter((t: { waits: boolean }) => t.waits).map((t: { type: string }) => t.type)).toEqual(['ask', 'delay', 'start_form']);
  expect((await app.inject({ method: 'GET', url: '/api/automation/node-types' })).statusCode).toBe(401);
}, 60_000);

it('A-4 create, get, list, update with version check, toggle and delete; another workspace gets 404', async () => {
  const app = shared;
  const w = await workspace(app);
  const call = api(app, w.key);
  const created = await call('POST', '/api/automation', { name: 'Hi', waba_id: w.accountId, phone_number_id: w.numberId, ...simple });
  expect(created.statusCode).toBe(201);
  const flow = created.json();
  expect(flow).toMatchObject({
    status: 'inactive',
    version: 1,
    waba_id: w.accountId,
    phone_number_id: w.numberId,
    last_execution_at: null,
    connections: [{ from_node: 'hello', from_port: 'out', to_node: 'greet' }],
  });
  expect(flow.nodes[0].parameters).toEqual({ text: 'Hello {{contact.name}}' });
  expect(flow.triggers[0].parameters).toEqual({ keywords: ['hi'] });
  expect((await call('GET', `/api/automation/${flow.id}`)).json()).toEqual(flow);

  const listed = (await call('GET', `/api/automation?waba_id=${w.accountId}`)).json();
  expect(listed.data).toEqual([expect.objectContaining({ id: flow.id, trigger_types: ['keyword'], node_count: 1 })]);
  expect(listed.data[0].nodes).toBeUndefined();

  const updated = await call('PUT', `/api/automation/${flow.id}`, { name: 'Hi 2', waba_id: w.accountId, ...simple, version: 1 });
  expect(updated.statusCode).toBe(200);
  expect(updated.json()).toMatchObject({ name: 'Hi 2', version: 2, phone_number_id: null });
  const stale = await call('PUT', `/api/automation/${flow.id}`, { name: 'Hi 3', waba_id: w.accountId, ...simple, version: 1 });
  expect(stale.statusCode).toBe(409);
  expect(stale.json().detail).toBe('The flow is at version 2; this edit is based on version 1. Reload it and retry.');

  const on = await call('PATCH', `/api/automation/${flow.id}/toggle`, { active: true });
  expect(on.json()).toMatchObject({ status: 'active', version: 2 });
  expect((await call('PATCH', `/api/automation/${flow.id}/toggle`, { active: true })).json().status).toBe('active'); // idempotent

  const other = await signUp(app);
  const otherKey = (await createKey(app, other.token, { name: 'x' })).secret;
  for (const [method, url, body] of [
    ['GET', `/api/automation/${flow.id}`],
    ['PUT', `/api/automation/${flow.id}`, { name: 'x', waba_id: w.accountId, ...simple }],
    ['PATCH', `/api/automation/${flow.id}/toggle`, { active: false }],
    ['POST', `/api/automation/${flow.id}/test`, { message: { type: 'text', text: 'hi' } }],
    ['GET', `/api/automation/${flow.id}/executions`],
    ['DELETE', `/api/automation/${flow.id}`],
  ] as const) {
    const res = await api(app, otherKey)(method, url, body);
    expect(res.statusCode, `${method} ${url}`).toBe(404);
    expect(res.json().detail).toBe(`No flow ${flow.id} in this workspace.`);
  }
  expect((await call('GET', '/api/automation')).json().data).toHaveLength(1);

  expect((await call('DELETE', `/api/automation/${flow.id}`)).statusCode).toBe(204);
  expect((await call('GET', `/api/automation/${flow.id}`)).statusCode).toBe(404);
  expect((await call('DELETE', `/api/automation/${flow.id}`)).statusCode).toBe(404);
}, 60_000);

it('A-5 toggle refuses to activate a flow whose template is no longer approved; deactivating cancels waiting runs', async () => {
  const app = shared;
  const w = await workspace(app);
  const call = api(app, w.key);
  const db = app.platform.store.db;
  const tpl = await templateId(app, w.workspaceId, 'welcome_offer');
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
    nodes: [
      { id: 'ask', type: 'ask', parameters: { question: 'Ready?' } },
      { id: 'tpl', type: 'send_template', parameters: { template_id: tpl, language: 'en_US' } },
    ],
    connections: [
      { from_node: 'any', to_node: 'ask' },
      { from_node: 'ask', from_port: 'reply', to_node: 'tpl' },
    ],
  });
  await inboundText(app, w, '+4915112340002', 'hello');
  await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'waiting'), 10_000, 'a waiting run');
  const off = await call('PATCH', `/api/automation/${flow.id}/toggle`, { active: false });
  expect(off.json().status).toBe('inactive');
  const [run] = await executions(app, flow.id);
  expect(run).toMatchObject({ status: 'cancelled', error: { code: 'cancelled', message: 'The flow was deactivated.' } });

  await db.updateTable('message_templates').set({ status: 'REJECTED' }).where('id', '=', tpl).execute();
  const refused = await call('PATCH', `/api/automation/${flow.id}/toggle`, { active: true });
  expect(refused.statusCode).toBe(422);
  expect(refused.json()).toMatchObject({ title: 'Flow cannot be activated', errors: [{ pointer: '/body/nodes/1/parameters/template_id' }] });
  expect((await call('GET', `/api/automation/${flow.id}`)).json().status).toBe('inactive');
}, 60_000);

it('A-6 testFlow: the path and the messages it would send; sends nothing and writes nothing', async () => {
  const app = await build();
  const w = await workspace(app);
  const db = app.platform.store.db;
  const vip = await addTag(app, w.workspaceId, 'vip');
  const tpl = await templateId(app, w.workspaceId, 'welcome_offer');
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['book'], match: 'contains' } }],
    nodes: [
      { id: 'ask', type: 'ask', parameters: { question: 'Which day, {{contact.name}}?', expect: 'date', save_as: 'day' } },
      { id: 'wait', type: 'delay', parameters: { duration: 2, unit: 'days' } },
      { id: 'if', type: 'condition', parameters: { rules: [{ subject: 'tag', tag_id: vip, operator: 'has_tag' }] } },
      { id: 'tag', type: 'add_tag', parameters: { tag_id: vip } },
      { id: 'call', type: 'http_request', parameters: { method: 'POST', url: 'https://api.example.com/bookings', body: '{"day":"{{vars.day}}"}' } },
      { id: 'tpl', type: 'send_template', parameters: { template_id: tpl, language: 'en_US' } },
    ],
    connections: [
      { from_node: 'kw', to_node: 'ask' },
      { from_node: 'ask', from_port: 'reply', to_node: 'wait' },
      { from_node: 'wait', to_node: 'if' },
      { from_node: 'if', from_port: 'false', to_node: 'tag' },
      { from_node: 'tag', to_node: 'call' },
      { from_node: 'call', from_port: 'success', to_node: 'tpl' },
    ],
  });
  const count = async () => ({
    messages: (await db.selectFrom('messages').select('id').execute()).length,
    executions: (await db.selectFrom('automation_executions').select('id').execute()).length,
    tags: (await db.selectFrom('contact_tags').select('tag_id').execute()).length,
    contacts: (await db.selectFrom('contacts').select('id').execute()).length,
  });
  const sandbox = app.platform.provider('sandbox');
  const sends: unknown[] = [];
  const original = sandbox.sendMessage.bind(sandbox);
  sandbox.sendMessage = async (...args: Parameters<typeof original>) => (sends.push(args), original(...args));
  const before = await count();

  const res = await api(app, w.key)('POST', `/api/automation/${flow.id}/test`, {
    message: { type: 'text', text: 'I want to book' },
    contact: { name: 'Maria', contact_no: '+14155550123' },
    replies: [
      { type: 'text', text: 'soon' },
      { type: 'text', text: '2026-12-01' },
    ],
  });
  expect(res.statusCode, res.body).toBe(200);
  const result = res.json();
  expect(result).toMatchObject({ flow_id: flow.id, flow_version: 1, outcome: 'completed', trigger_id: 'kw', waiting_at: null, error: null });
  expect(result.steps.map((s: { node_id: string; port: string | null }) => `${s.node_id}:${s.port}`)).toEqual([
    'kw:out',
    'ask:null',
    'ask:reply',
    'wait:out',
    'if:false',
    'tag:out',
    'call:success',
    'tpl:out',
  ]);
  expect(result.steps.find((s: { node_id: string }) => s.node_id === 'call').simulated).toBe(true);
  expect(result.messages.map((m: { type: string; preview: string }) => [m.type, m.preview])).toEqual([
    ['text', 'Which day, Maria?'],
    ['template', 'template welcome_offer (en_US)'],
  ]);
  expect(result.messages[0].payload).toEqual({ messageType: 'text', message: 'Which day, Maria?', preview_url: false });
  expect(await count()).toEqual(before);
  expect(sends).toHaveLength(0);

  const waiting = (await api(app, w.key)('POST', `/api/automation/${flow.id}/test`, { message: { type: 'text', text: 'book' } })).json();
  expect(waiting).toMatchObject({ outcome: 'waiting', waiting_at: 'ask' });
  const none = (await api(app, w.key)('POST', `/api/automation/${flow.id}/test`, { message: { type: 'text', text: 'hello' } })).json();
  expect(none).toMatchObject({ outcome: 'not_triggered', trigger_id: null, steps: [], messages: [] });
  const both = await api(app, w.key)('POST', `/api/automation/${flow.id}/test`, {
    message: { type: 'text', text: 'book' },
    contact_id: 'ct_5Bq9Lm2XvT8rWn',
    contact: { name: 'x' },
  });
  expect(both.statusCode).toBe(400);
  expect(await count()).toEqual(before);
}, 60_000);
