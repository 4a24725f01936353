// Actions against real effects: http_request through the SSRF-safe client with its JSON result
// used by a later node, a private target refused at run time, set_field, remove_tag,
// assign_agent, interactive buttons and a form sent by its flow.flow_id.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { build } from '#test/helper.js';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { addTag, api, createFlow, executions, inboundText, outbound, until, workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

it('A-10 http_request posts the expanded body and its JSON response feeds the next node', async () => {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(body);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ order: { status: 'shipped' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const app = await build();
    const w = await workspace(app);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    const flow = await createFlow(app, w, {
      triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
      nodes: [
        { id: 'call', type: 'http_request', parameters: { method: 'POST', url, body: '{"q":"{{trigger.text}}"}', save_as: 'result', timeout_ms: 3000 } },
        { id: 'say', type: 'send_text', parameters: { text: 'Your order is {{vars.result.order.status}}' } },
        { id: 'oops', type: 'send_text', parameters: { text: 'The lookup failed' } },
      ],
      connections: [
        { from_node: 'any', to_node: 'call' },
        { from_node: 'call', from_port: 'success', to_node: 'say' },
        { from_node: 'call', from_port: 'error', to_node: 'oops' },
      ],
    });
    const phone = '+4915112340005';
    await inboundText(app, w, phone, 'A-17');
    await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 15_000, 'completion');
    expect(received).toEqual(['{"q":"A-17"}']);
    expect((await outbound(app, phone)).map((m) => (m.content as { text: string }).text)).toEqual(['Your order is shipped']);
  } finally {
    await new Promise((r) => server.close(r));
  }
}, 60_000);

it('A-10b an http_request answered 503 leaves through error; the step records http_error with the status', async () => {
  const server = createServer((_req, res) => {
    res.statusCode = 503;
    res.end('busy');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const app = await build();
    const w = await workspace(app);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    const flow = await createFlow(app, w, {
      triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
      nodes: [{ id: 'call', type: 'http_request', parameters: { method: 'GET', url, timeout_ms: 3000 } }],
      connections: [{ from_node: 'any', to_node: 'call' }],
    });
    await inboundText(app, w, '+4915112340015', 'status?');
    await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 15_000, 'completion');
    const listed = await api(app, w.key)('GET', `/api/automation/${flow.id}/executions`);
    const call = listed.json().data[0].steps.find((s: { node_id: string }) => s.node_id === 'call');
    expect(call).toMatchObject({ port: 'error', detail: 'HTTP 503', error: { code: 'http_error', http_status: 503, message: 'HTTP 503', node_id: 'call' } });
  } finally {
    await new Promise((r) => server.close(r));
  }
}, 60_000);

it('A-11 G: a URL that expands to a private address is refused when the node runs (error port, no connection)', async () => {
  const app = await build({ env: { ALLOW_PRIVATE_URLS: 'false' } });
  const w = await workspace(app);
  let connections = 0;
  const server = createServer((_req, res) => (connections++, res.end('{}')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as AddressInfo).port;
    const flow = await createFlow(app, w, {
      triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
      nodes: [
        { id: 'call', type: 'http_request', parameters: { method: 'GET', url: `http://{{trigger.text}}:${port}/admin` } },
        { id: 'oops', type: 'send_text', parameters: { text: 'refused' } },
      ],
      connections: [
        { from_node: 'any', to_node: 'call' },
        { from_node: 'call', from_port: 'error', to_node: 'oops' },
      ],
    });
    await inboundText(app, w, '+4915112340006', '127.0.0.1');
    const done = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 15_000, 'completion');
    const step = await app.platform.store.db
      .selectFrom('automation_steps')
      .select(['port', 'detail'])
      .where('execution_id', '=', done.id)
      .where('node_id', '=', 'call')
      .executeTakeFirstOrThrow();
    expect(step.port).toBe('error');
    expect(step.detail).toMatch(/^refused/);
    expect(connections).toBe(0);
    // The execution as listed says why the call took its error port.
    const listed = await api(app, w.key)('GET', `/api/automation/${flow.id}/executions`);
    const call = listed.json().data[0].steps.find((s: { node_id: string }) => s.node_id === 'call');
    expect(call).toMatchObject({
      status: 'completed',
      port: 'error',
      detail: expect.stringMatching(/^refused/),
      error: { code: 'unsafe_url', node_id: 'call' },
    });
    expect(call.error.http_status).toBeUndefined();
  } finally {
    await new Promise((r) => server.close(r));
  }
}, 60_000);

it('A-12 set_field, remove_tag, assign_agent, send_buttons and start_form act on the contact and chat', async () => {
  const app = await build();
  const w = await workspace(app);
  const db = app.platform.store.db;
  const old = await addTag(app, w.workspaceId, 'cold');
  await db
    .insertInto('custom_fields')
    .values({ id: 'cf_0000000000000001', workspace_id: w.workspaceId, key: 'plan', label: 'Plan', type: 'text', options: null })
    .execute();
  const now = new Date();
  await db
    .insertInto('forms')
    .values({
      id: 'form_0000000000000001',
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      name: 'Intake',
      category: 'OTHER',
      title: 'Intake',
      submit_label: 'Send',
      fields: JSON.stringify([]),
      provider_flow_id: '1187364459302715',
      flow_status: 'PUBLISHED',
      published_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const owner = await db.selectFrom('owners').select('id').where('workspace_id', '=', w.workspaceId).executeTakeFirstOrThrow();
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'any', type: 'message_received', parameters: {} }],
    nodes: [
      { id: 'plan', type: 'set_field', parameters: { field: 'plan', value: 'gold-{{trigger.text}}' } },
      { id: 'untag', type: 'remove_tag', parameters: { tag_id: old } },
      { id: 'agent', type: 'assign_agent', parameters: { strategy: 'specific', agent_id: owner.id, note: 'VIP' } },
      {
        id: 'choose',
        type: 'send_buttons',
        parameters: {
          body: 'Pick one',
          buttons: [
            { id: 'a', title: 'A' },
            { id: 'b', title: 'B' },
          ],
        },
      },
      { id: 'form', type: 'start_form', parameters: { flow_id: '1187364459302715', body: 'Tell us more', cta: 'Open form' } },
    ],
    connections: [
      { from_node: 'any', to_node: 'plan' },
      { from_node: 'plan', to_node: 'untag' },
      { from_node: 'untag', to_node: 'agent' },
      { from_node: 'agent', to_node: 'choose' },
      { from_node: 'choose', to_node: 'form' },
    ],
  });
  const phone = '+4915112340007';
  await db.insertInto('contacts').values({ id: 'ct_0000000000000007', workspace_id: w.workspaceId, phone, name: 'Ana' }).execute();
  await db.insertInto('contact_tags').values({ contact_id: 'ct_0000000000000007', tag_id: old }).execute();
  const first = await inboundText(app, w, phone, 'x');
  expect(first.contactId).toBe('ct_0000000000000007');
  const waiting = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'waiting'), 15_000, 'the form wait');
  expect(waiting).toMatchObject({ current_node_id: 'form', wait_kind: 'form' });
  const contact = await db.selectFrom('contacts').select('custom_fields').where('id', '=', first.contactId).executeTakeFirstOrThrow();
  expect(contact.custom_fields).toEqual({ plan: 'gold-x' });
  const chat = await db.selectFrom('chats').select('assigned_owner_id').where('contact_id', '=', first.contactId).executeTakeFirstOrThrow();
  expect(chat.assigned_owner_id).toBe(owner.id);
  const sent = await outbound(app, phone);
  expect(sent.map((m) => m.type)).toEqual(['interactive', 'interactive']);
  expect(sent[1]!.content).toMatchObject({
    interactive: {
      type: 'flow',
      action: {
        parameters: {
          flow_id: '1187364459302715',
          flow_cta: 'Open form',
          flow_token: waiting.id,
          // The provider requires the screen a `navigate` Flow opens on.
          flow_action: 'navigate',
          flow_action_payload: { screen: 'STEP_A' },
        },
      },
    },
  });
  // A plain text does not answer a form: the run keeps waiting.
  await inboundText(app, w, phone, 'hello?');
  await elapse(300, 'absence: a text that does not resume the run changes nothing to wait on');
  expect((await executions(app, flow.id))[0]!.status).toBe('waiting');
  expect(await db.selectFrom('contact_tags').select('tag_id').where('contact_id', '=', first.contactId).execute()).toEqual([]);

  // The submission (an nfm_reply carrying the run's flow token) resumes it through `submitted`.
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  const number = await db.selectFrom('phone_numbers').select('provider_phone_number_id').where('id', '=', w.numberId).executeTakeFirstOrThrow();
  await sandbox.simulateInbound({
    phoneNumberId: number.provider_phone_number_id,
    from: phone,
    message: {
      type: 'interactive',
      interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: JSON.stringify({ flow_token: waiting.id, size: 'L' }) } },
    } as never,
  });
  const done = await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 15_000, 'the submission');
  const step = await db
    .selectFrom('automation_steps')
    .select(['port', 'status'])
    .where('execution_id', '=', done.id)
    .where('node_id', '=', 'form')
    .executeTakeFirstOrThrow();
  expect(step).toEqual({ port: 'submitted', status: 'completed' });
}, 60_000);
