// Catalogue cases (/work/shared/reliability/bad-inputs.md) that reach automation: one test each.
import type { FastifyInstance } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { createKey, signUp } from '#test/unit/account/support.js';
import { dispatchInbound } from '#server/apis/messaging/automation/dispatcher.js';
import { registerInboundResponder } from '#server/apis/messaging/automation/responders.js';
import { api, createFlow, executions, inboundText, until, workspace, type Workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

let app: FastifyInstance;
let w: Workspace;
let otherKey: string;

beforeAll(async () => {
  app = await buildShared();
  w = await workspace(app);
  const other = await signUp(app);
  otherKey = (await createKey(app, other.token, { name: 'b' })).secret;
});

const hello = {
  triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
  nodes: [{ id: 'hi', type: 'send_text', parameters: { text: 'Hi' } }],
  connections: [{ from_node: 'any', to_node: 'hi' }],
};

it('E6 one inbound message dispatched twice (two instances hearing one event) starts one flow run', async () => {
  const flow = await createFlow(app, w, hello);
  const first = await inboundText(app, w, '+4915112340008', 'hello');
  await until(async () => (await executions(app, flow.id)).length === 1, 10_000, 'the run');
  expect(await Promise.all([dispatchInbound(app, first.messageId), dispatchInbound(app, first.messageId)])).toEqual([null, null]);
  await elapse(300, 'absence: a second run would start with no event to wait on');
  expect(await executions(app, flow.id)).toHaveLength(1);
  await api(app, w.key)('DELETE', `/api/automation/${flow.id}`);
}, 60_000);

it('E6b responders run by order until one answers; a failing responder does not stop the next', async () => {
  const calls: string[] = [];
  const offs = [
    registerInboundResponder(app, { name: 'late', order: 50, respond: async () => (calls.push('late'), true) }),
    registerInboundResponder(app, { name: 'broken', order: 1, respond: async () => (calls.push('broken'), Promise.reject(new Error('boom'))) }),
    registerInboundResponder(app, { name: 'never', order: 60, respond: async () => (calls.push('never'), true) }),
  ];
  try {
    await inboundText(app, w, '+4915112340009', 'no flow matches this');
    await until(async () => calls.includes('late'), 10_000, 'the responder');
    await elapse(200, "absence: 'never' would run after 'late' answered, with no event to wait on");
    expect(calls).toEqual(['broken', 'late']);
  } finally {
    offs.forEach((off) => off());
  }
}, 60_000);

it('H7 JSON nested 10,000 deep in node parameters: 400, no stack overflow', async () => {
  const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
  const body = `{"name":"x","waba_id":"${w.accountId}","triggers":[{"id":"t","type":"message_received","parameters":${deep}}],"nodes":[{"id":"n","type":"end","parameters":{}}],"connections":[]}`;
  const res = await app.inject({ method: 'POST', url: '/api/automation', headers: { 'x-api-key': w.key, 'content-type': 'application/json' }, payload: body });
  expect([400, 413, 422]).toContain(res.statusCode);
  expect(res.body).not.toMatch(/RangeError|stack/i);
});

it('J6 __proto__ and constructor keys in flow parameters: refused, Object.prototype untouched', async () => {
  const body = `{"name":"x","waba_id":"${w.accountId}","triggers":[{"id":"t","type":"message_received","parameters":{"__proto__":{"polluted":1}}}],"nodes":[{"id":"n","type":"send_text","parameters":{"text":"x","constructor":{"prototype":{"polluted":1}}}}],"connections":[{"from_node":"t","to_node":"n"}]}`;
  const res = await app.inject({ method: 'POST', url: '/api/automation', headers: { 'x-api-key': w.key, 'content-type': 'application/json' }, payload: body });
  expect([400, 422]).toContain(res.statusCode);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

it('K8 a flow with 100,000 nodes: 400 before any work', async () => {
  const nodes = Array.from({ length: 100_000 }, (_, i) => ({ id: `n${i}`, type: 'end', parameters: {} }));
  const res = await api(app, w.key)('POST', '/api/automation', { name: 'huge', waba_id: w.accountId, triggers: hello.triggers, nodes, connections: [] });
  expect([400, 413]).toContain(res.statusCode);
});

it("B2 another workspace's waba_id on listSequences and listFlows: 404", async () => {
  for (const url of [`/api/sequences?waba_id=${w.accountId}`, `/api/automation?waba_id=${w.accountId}`]) {
    const res = await api(app, otherKey)('GET', url);
    expect(res.statusCode, url).toBe(404);
    expect(res.json().detail).toBe(`No business account ${w.accountId} in this workspace.`);
  }
});

it("B3 another workspace's form flow.flow_id in start_form: 422 naming the field", async () => {
  const now = new Date();
  await app.platform.store.db
    .insertInto('forms')
    .values({
      id: 'form_0000000000000b03',
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      name: 'A',
      category: 'OTHER',
      title: 'A',
      submit_label: 'Send',
      fields: '[]',
      provider_flow_id: '555000111',
      flow_status: 'PUBLISHED',
      published_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const mine = await workspace(app);
  const res = await api(app, mine.key)('POST', '/api/automation', {
    name: 'x',
    waba_id: mine.accountId,
    triggers: hello.triggers,
    nodes: [{ id: 'f', type: 'start_form', parameters: { flow_id: '555000111', body: 'b', cta: 'c' } }],
    connections: [{ from_node: 'any', to_node: 'f' }],
  });
  expect(res.statusCode).toBe(422);
  expect(res.json().errors).toEqual([
    { pointer: '/body/nodes/0/parameters/flow_id', detail: "node 'f': no form of this workspace has flow.flow_id 555000111" },
  ]);
});

it("B6 a cursor from another operation's listing: 400", async () => {
  for (let i = 0; i < 2; i++) await createFlow(app, w, hello, { status: 'inactive' });
  const page = (await api(app, w.key)('GET', '/api/automation?limit=1')).json();
  expect(page.next_cursor).toBeTruthy();
  const res = await api(app, w.key)('GET', `/api/sequences?waba_id=${w.accountId}&cursor=${encodeURIComponent(page.next_cursor)}`);
  expect(res.statusCode).toBe(400);
  const second = await api(app, w.key)('GET', `/api/automation?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`);
  expect(second.statusCode).toBe(200);
  expect(second.json().data[0].id).not.toBe(page.data[0].id);
});

it('B8 malformed flow ids: 400 from the contract, never 500', async () => {
  for (const id of ['abc', 'x'.repeat(500), 'flow_%00abc']) {
    const res = await api(app, w.key)('GET', `/api/automation/${id}`);
    expect([400, 404]).toContain(res.statusCode);
  }
});
