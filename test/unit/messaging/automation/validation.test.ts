// Saving a flow validates it against the node-type catalogue: one test per bad shape, each a 422
// whose errors[] point at the node, connection or parameter, and nothing stored.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { signUp, createKey } from '#test/unit/account/support.js';
import { addTag, api, templateId, workspace, type Workspace } from './support.js';

let app: FastifyInstance;
let w: Workspace;
let tag: string;

beforeAll(async () => {
  app = await buildShared({ env: { ALLOW_PRIVATE_URLS: 'false' } });
  w = await workspace(app);
  tag = await addTag(app, w.workspaceId, 'lead');
});

const trigger = { id: 'hello', type: 'message_received', parameters: {} };
const ok = (nodes: unknown[], connections: unknown[], triggers: unknown[] = [trigger]) => ({
  name: 'Flow',
  waba_id: w.accountId,
  triggers,
  nodes,
  connections,
});
const greet = { id: 'greet', type: 'send_text', parameters: { text: 'Hi!' } };

async function refused(body: unknown, status = 422) {
  const before = await app.platform.store.db.selectFrom('automation_flows').select('id').execute();
  const res = await api(app, w.key)('POST', '/api/automation', body);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toContain('application/problem+json');
  expect((await app.platform.store.db.selectFrom('automation_flows').select('id').execute()).length).toBe(before.length);
  return res.json() as { type: string; detail: string; errors: { pointer: string; detail: string }[] };
}

describe('flow validation (422 naming the node)', () => {
  it('V1 unknown node type', async () => {
    const p = await refused(ok([{ id: 'greet', type: 'send_txt', parameters: { text: 'Hi' } }], [{ from_node: 'hello', to_node: 'greet' }]));
    expect(p.type).toMatch(/unprocessable$/);
    expect(p.errors).toEqual([{ pointer: '/body/nodes/0/type', detail: "node 'greet': unknown node type 'send_txt'" }]);
  });

  it('V2 a trigger type among the nodes, and an action among the triggers', async () => {
    const p = await refused(ok([{ id: 'kw', type: 'keyword', parameters: { keywords: ['x'] } }], [{ from_node: 'greet', to_node: 'kw' }], [greet]));
    expect(p.errors.map((e) => e.pointer)).toEqual(expect.arrayContaining(['/body/triggers/0/type', '/body/nodes/0/type']));
  });

  it('V3 missing required parameter', async () => {
    const p = await refused(ok([{ id: 'tag', type: 'add_tag', parameters: {} }], [{ from_node: 'hello', to_node: 'tag' }]));
    expect(p.errors).toEqual([{ pointer: '/body/nodes/0/parameters/tag_id', detail: "node 'tag': missing required parameter 'tag_id'" }]);
  });

  it('V4 invalid parameter value and unknown parameter', async () => {
    const p = await refused(
      ok([{ id: 'wait', type: 'delay', parameters: { duration: 0, unit: 'weeks', colour: 'red' } }], [{ from_node: 'hello', to_node: 'wait' }]),
    );
    const pointers = p.errors.map((e) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/body/nodes/0/parameters/duration', '/body/nodes/0/parameters/unit', '/body/nodes/0/parameters/colour']));
    expect(p.errors.every((e) => e.detail.startsWith("node 'wait':"))).toBe(true);
  });

  it('V5 duplicate node id', async () => {
    const p = await refused(ok([greet, { ...greet }], [{ from_node: 'hello', to_node: 'greet' }]));
    expect(p.errors).toContainEqual({ pointer: '/body/nodes/1/id', detail: "node 'greet': the id is used twice in this flow" });
  });

  it('V6 dangling connection (to a missing node)', async () => {
    const p = await refused(
      ok(
        [greet],
        [
          { from_node: 'hello', to_node: 'greet' },
          { from_node: 'greet', to_node: 'missing' },
        ],
      ),
    );
    expect(p.errors).toEqual([
      { pointer: '/body/connections/1/to_node', detail: "connection from 'greet' leads to 'missing', which is not a node of this flow" },
    ]);
  });

  it('V7 connection from a port the type lacks', async () => {
    const p = await refused(ok([greet], [{ from_node: 'hello', from_port: 'true', to_node: 'greet' }]));
    expect(p.errors[0]!.pointer).toBe('/body/connections/0/from_port');
  });

  it('V8 connection into a trigger', async () => {
    const p = await refused(
      ok(
        [greet],
        [
          { from_node: 'hello', to_node: 'greet' },
          { from_node: 'greet', to_node: 'hello' },
        ],
      ),
    );
    expect(p.errors).toContainEqual({
      pointer: '/body/connections/1/to_node',
      detail: "connection from 'greet' leads into trigger 'hello'; triggers have no input",
    });
  });

  it('V9 two connections on one port', async () => {
    const other = { id: 'other', type: 'send_text', parameters: { text: 'Bye' } };
    const p = await refused(
      ok(
        [greet, other],
        [
          { from_node: 'hello', to_node: 'greet' },
          { from_node: 'hello', to_node: 'other' },
        ],
      ),
    );
    expect(p.errors.map((e) => e.pointer)).toContain('/body/connections/1');
  });

  it('V10 unreachable node', async () => {
    const p = await refused(ok([greet, { id: 'island', type: 'send_text', parameters: { text: 'alone' } }], [{ from_node: 'hello', to_node: 'greet' }]));
    expect(p.errors).toEqual([{ pointer: '/body/nodes/1', detail: "node 'island' is not reachable from any trigger" }]);
  });

  it('V11 cycle without a waiting node', async () => {
    const again = { id: 'again', type: 'send_text', parameters: { text: 'again' } };
    const p = await refused(
      ok(
        [greet, again],
        [
          { from_node: 'hello', to_node: 'greet' },
          { from_node: 'greet', to_node: 'again' },
          { from_node: 'again', to_node: 'greet' },
        ],
      ),
    );
    expect(p.errors).toEqual([
      { pointer: '/body/connections/2', detail: "the connection from 'again' to 'greet' closes a cycle without a waiting node (ask, delay, start_form)" },
    ]);
  });

  it('V12 a cycle through an ask is accepted', async () => {
    const ask = { id: 'ask', type: 'ask', parameters: { question: 'Again?' } };
    const res = await api(app, w.key)(
      'POST',
      '/api/automation',
      ok(
        [greet, ask],
        [
          { from_node: 'hello', to_node: 'greet' },
          { from_node: 'greet', to_node: 'ask' },
          { from_node: 'ask', from_port: 'reply', to_node: 'greet' },
        ],
      ),
    );
    expect(res.statusCode, res.body).toBe(201);
  });

  it('V13 no trigger: 400 validation (the contract requires at least one)', async () => {
    const p = await refused(ok([greet], [], []), 400);
    expect(p.type).toMatch(/validation$/);
  });

  it('V14 more triggers than the contract allows (10): 400', async () => {
    const triggers = Array.from({ length: 11 }, (_, i) => ({ id: `t${i}`, type: 'message_received', parameters: {} }));
    await refused(
      ok(
        [greet],
        triggers.map((t) => ({ from_node: t.id, to_node: 'greet' })),
        triggers,
      ),
      400,
    );
  });

  it('V15 unknown tag, template and custom field', async () => {
    const p = await refused(
      ok(
        [
          { id: 'tag', type: 'add_tag', parameters: { tag_id: 'tag_0000000000000000' } },
          { id: 'tpl', type: 'send_template', parameters: { template_id: 'tpl_0000000000000000', language: 'en_US' } },
          { id: 'set', type: 'set_field', parameters: { field: 'shoe_size', value: '42' } },
        ],
        [
          { from_node: 'hello', to_node: 'tag' },
          { from_node: 'tag', to_node: 'tpl' },
          { from_node: 'tpl', to_node: 'set' },
        ],
      ),
    );
    expect(p.errors.map((e) => e.pointer)).toEqual([
      '/body/nodes/0/parameters/tag_id',
      '/body/nodes/1/parameters/template_id',
      '/body/nodes/2/parameters/field',
    ]);
  });

  it('V16 a form id where flow.flow_id belongs', async () => {
    const p = await refused(
      ok(
        [{ id: 'form', type: 'start_form', parameters: { flow_id: 'form_8Hn2QvX4mKp7Ld', body: 'Fill in', cta: 'Open' } }],
        [{ from_node: 'hello', to_node: 'form' }],
      ),
    );
    expect(p.errors).toEqual([
      { pointer: '/body/nodes/0/parameters/flow_id', detail: "node 'form': form_8Hn2QvX4mKp7Ld is a form id; use the form's flow.flow_id (digits) instead" },
    ]);
  });

  it('V17 a private or metadata URL in send_media and http_request: 422 unsafe-url', async () => {
    const p = await refused(
      ok(
        [
          { id: 'img', type: 'send_media', parameters: { media_type: 'image', url: 'https://169.254.169.254/latest/meta-data' } },
          { id: 'call', type: 'http_request', parameters: { method: 'GET', url: 'https://[::1]:8080/admin' } },
        ],
        [
          { from_node: 'hello', to_node: 'img' },
          { from_node: 'img', to_node: 'call' },
        ],
      ),
    );
    expect(p.type).toMatch(/unsafe-url$/);
    expect(p.errors.map((e) => e.pointer)).toEqual(['/body/nodes/0/parameters/url', '/body/nodes/1/parameters/url']);
  });

  it('V18 condition rule without the field its subject needs', async () => {
    const p = await refused(
      ok(
        [{ id: 'if', type: 'condition', parameters: { rules: [{ subject: 'contact_field', operator: 'equals', value: 'x' }] } }],
        [{ from_node: 'hello', to_node: 'if' }],
      ),
    );
    expect(p.errors).toEqual([{ pointer: '/body/nodes/0/parameters/rules/0/field', detail: "node 'if': rule 0 on contact_field needs 'field'" }]);
  });

  it('V19 a forbidden header in http_request', async () => {
    const p = await refused(
      ok(
        [{ id: 'call', type: 'http_request', parameters: { method: 'GET', url: 'https://api.example.com/x', headers: { Host: 'evil' } } }],
        [{ from_node: 'hello', to_node: 'call' }],
      ),
    );
    expect(p.errors[0]!.pointer).toBe('/body/nodes/0/parameters/headers/Host');
  });

  it("V20 another workspace's account or tag answers as unknown", async () => {
    const other = await signUp(app);
    const key = await createKey(app, other.token, { name: 'other' });
    const res = await api(app, key.secret)('POST', '/api/automation', ok([greet], [{ from_node: 'hello', to_node: 'greet' }]));
    expect(res.statusCode).toBe(404);
    expect(res.json().detail).toBe(`No business account ${w.accountId} in this workspace.`);
    const mine = await workspace(app);
    const p = await api(app, mine.key)('POST', '/api/automation', {
      ...ok([{ id: 't', type: 'add_tag', parameters: { tag_id: tag } }], [{ from_node: 'hello', to_node: 't' }]),
      waba_id: mine.accountId,
    });
    expect(p.statusCode).toBe(422);
    expect(p.json().errors[0].pointer).toBe('/body/nodes/0/parameters/tag_id');
  });

  it('V21 activating on create with a rejected template is refused', async () => {
    const rejected = await templateId(app, w.workspaceId, 'spring_rejected');
    const p = await refused({
      ...ok([{ id: 'tpl', type: 'send_template', parameters: { template_id: rejected, language: 'en_US' } }], [{ from_node: 'hello', to_node: 'tpl' }]),
      status: 'active',
    });
    expect(p.errors[0]!.detail).toContain('is not approved (status REJECTED)');
  });
});
