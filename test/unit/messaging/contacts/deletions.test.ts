// Deleting tags, segments, custom fields and templates: 409 naming the user while a segment, an
// unfinished campaign or an automation uses it (nothing deleted, no provider call), 204 once
// free; a template is deleted at the provider (the fake Cloud API) first, and a provider refusal
// keeps it; another workspace's ids are 404 (B3).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { cloudTenant, storeTemplate, type Tenant as CloudTenant } from '../inbox/support.js';
import { call as callAs, workspace, type Workspace } from '../campaigns/support.js';

let fake: FakeProvider;
let app: FastifyInstance;
let w: Workspace;
let other: Workspace;
const PROBLEM = 'https://chatapp.example/problems/';

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  [w, other] = [await workspace(app), await workspace(app)];
}, 120_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const api = (as: { key: string }) => async (method: string, url: string, payload?: unknown) => {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { 'x-api-key': as.key, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
  return { status: res.statusCode, body: res.body ? res.json() : undefined };
};

async function scheduledCampaign(as: Workspace, audience: unknown, template = { name: 'welcome_offer', language: 'en_US' }) {
  const res = await callAs(app, as.key)('POST', '/api/campaigns', {
    name: `c-${newId('x')}`,
    chatapp_phone_number: as.phone,
    audience,
    template,
    scheduled_at: new Date(Date.now() + 3_600_000).toISOString(),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

async function flowUsing(as: Workspace, graph: unknown) {
  const db = app.platform.store.db;
  const now = new Date();
  const id = newId('flw');
  await db
    .insertInto('automation_flows')
    .values({
      id,
      workspace_id: as.workspaceId,
      business_account_id: as.accountId,
      phone_number_id: null,
      name: 'F',
      description: null,
      status: 'active',
      version: 2,
      created_at: now,
      updated_at: now,
    })
    .execute();
  // Only the current version counts: version 1 used it once, version 2 uses `graph`.
  await db
    .insertInto('automation_flow_versions')
    .values([
      { flow_id: id, version: 1, graph: JSON.stringify({ nodes: [] }), created_at: now },
      { flow_id: id, version: 2, graph: JSON.stringify(graph), created_at: now },
    ])
    .execute();
  return {
    id,
    drop: () => db.deleteFrom('automation_flows').where('id', '=', id).execute(),
  };
}

function conflict(res: { status: number; body: { type: string; detail: string } }, user: RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body.type).toBe(`${PROBLEM}conflict`);
  expect(res.body.detail).toMatch(user);
}

describe('deleteTag', () => {
  it('409 while a segment, an unfinished campaign or a flow uses it; then 204 and off its contacts', async () => {
    const a = api(w);
    const contact = (await a('POST', '/api/contacts', { contact_no: '+4915160000001', tags: ['VIP', 'news'] })).body;
    const tags = (await a('GET', '/api/tags')).body.data as { id: string; name: string }[];
    const vip = tags.find((t) => t.name === 'VIP')!;
    const segment = (await a('POST', '/api/segments', { name: 'vips', filter: { match: 'all', conditions: [{ field: 'tag', operator: 'eq', value: 'vip' }] } }))
      .body;
    conflict(await a('DELETE', `/api/tags/${vip.id}`), new RegExp(`segment ${segment.id}`));
    expect((await a('DELETE', `/api/segments/${segment.id}`)).status).toBe(204);

    const campaign = await scheduledCampaign(w, { type: 'tags', tags: ['vip'] });
    conflict(await a('DELETE', `/api/tags/${vip.id}`), new RegExp(`campaign ${campaign}`));
    expect((await callAs(app, w.key)('POST', `/api/campaigns/${campaign}/cancel`)).statusCode).toBe(200);

    const flow = await flowUsing(w, { nodes: [{ id: 'n1', type: 'add_tag', parameters: { tag_id: vip.id } }] });
    conflict(await a('DELETE', `/api/tags/${vip.id}`), new RegExp(`automation flow ${flow.id}`));
    await flow.drop();

    // B3: another workspace cannot delete it, and learns nothing.
    expect((await api(other)('DELETE', `/api/tags/${vip.id}`)).status).toBe(404);
    expect((await a('DELETE', `/api/tags/${vip.id}`)).status).toBe(204);
    expect((await a('DELETE', `/api/tags/${vip.id}`)).status).toBe(404);
    expect((await a('GET', `/api/contacts/${contact.id}`)).body.tags).toEqual(['news']);
  });
});

describe('deleteSegment', () => {
  it('409 while an unfinished campaign uses it; 204 once it is cancelled', async () => {
    const a = api(w);
    const segment = (await a('POST', '/api/segments', { name: 'everyone', filter: { match: 'all', conditions: [{ field: 'name', operator: 'exists' }] } }))
      .body;
    const campaign = await scheduledCampaign(w, { type: 'segment', segment_id: segment.id });
    conflict(await a('DELETE', `/api/segments/${segment.id}`), new RegExp(`campaign ${campaign}`));
    expect((await api(other)('DELETE', `/api/segments/${segment.id}`)).status).toBe(404);
    await callAs(app, w.key)('POST', `/api/campaigns/${campaign}/cancel`);
    expect((await a('DELETE', `/api/segments/${segment.id}`)).status).toBe(204);
    expect((await a('GET', '/api/segments')).body.data.map((s: { id: string }) => s.id)).not.toContain(segment.id);
  });
});

describe('deleteCustomField', () => {
  it('409 while a segment or a flow uses it; then 204 and its values leave every contact', async () => {
    const a = api(w);
    const field = (await a('POST', '/api/custom-fields', { key: 'shoe', label: 'Shoe', type: 'number' })).body;
    const kept = (await a('POST', '/api/custom-fields', { key: 'size', label: 'Size', type: 'text' })).body;
    const contact = (await a('POST', '/api/contacts', { contact_no: '+4915160000002', custom_fields: { shoe: 42, size: 'M' } })).body;
    const segment = (
      await a('POST', '/api/segments', { name: 'big feet', filter: { match: 'all', conditions: [{ field: 'custom_fields.shoe', operator: 'gt', value: 44 }] } })
    ).body;
    conflict(await a('DELETE', `/api/custom-fields/${field.id}`), new RegExp(`segment ${segment.id}`));
    await a('DELETE', `/api/segments/${segment.id}`);
    const flow = await flowUsing(w, { nodes: [{ id: 'n1', type: 'set_field', parameters: { field: 'shoe', value: '43' } }] });
    conflict(await a('DELETE', `/api/custom-fields/${field.id}`), new RegExp(`automation flow ${flow.id}`));
    await flow.drop();
    expect((await api(other)('DELETE', `/api/custom-fields/${field.id}`)).status).toBe(404);
    expect((await a('DELETE', `/api/custom-fields/${field.id}`)).status).toBe(204);
    expect((await a('GET', `/api/contacts/${contact.id}`)).body.custom_fields).toEqual({ size: 'M' });
    expect((await a('GET', '/api/custom-fields')).body.data.map((f: { id: string }) => f.id)).toContain(kept.id);
  });
});

describe('deleteTemplate', () => {
  let t: CloudTenant;
  beforeAll(async () => {
    t = await cloudTenant(app);
  });

  async function providerTemplate(name: string) {
    const created = await fetch(`${fake.baseUrl}/${'102290129340398'}/message_templates`, {
      method: 'POST',
      headers: { authorization: 'Bearer EAAG-fake-system-user-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({ name, language: 'en_US', category: 'UTILITY', components: [] }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    const row = await storeTemplate(app, t, { name, components: [{ type: 'BODY', text: 'Hi' }] });
    await app.platform.store.db.updateTable('message_templates').set({ provider_template_id: created.id }).where('id', '=', row.id).execute();
    return { id: row.id, providerId: created.id };
  }

  it('deletes at the provider (name and hsm_id), then here; 404 after, and for other workspaces', async () => {
    const tpl = await providerTemplate('order_update');
    expect((await api(w)('DELETE', `/api/templates/${tpl.id}`)).status).toBe(404);
    const res = await api({ key: t.key })('DELETE', `/api/templates/${tpl.id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    const deletes = fake.requests.filter((r) => r.method === 'DELETE');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatchObject({ path: '/102290129340398/message_templates', query: { name: 'order_update', hsm_id: tpl.providerId } });
    expect(fake.templates.some((x) => x.name === 'order_update')).toBe(false);
    expect((await api({ key: t.key })('DELETE', `/api/templates/${tpl.id}`)).status).toBe(404);
  });

  it('409 while an unfinished campaign or a flow uses it, without calling the provider', async () => {
    const a = api(w);
    const tpl = (
      await app.platform.store.db
        .selectFrom('message_templates')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('name', '=', 'order_shipped')
        .executeTakeFirstOrThrow()
    ).id;
    const campaign = await scheduledCampaign(w, { type: 'all_contacts' }, {
      name: 'order_shipped',
      language: 'en_US',
      body: ['a', 'b', 'c'],
      header: { type: 'text', text: 'x' },
    } as never);
    conflict(await a('DELETE', `/api/templates/${tpl}`), new RegExp(`campaign ${campaign}`));
    await callAs(app, w.key)('POST', `/api/campaigns/${campaign}/cancel`);
    const flow = await flowUsing(w, { nodes: [{ id: 'n1', type: 'send_template', parameters: { template_id: tpl, language: 'en_US' } }] });
    conflict(await a('DELETE', `/api/templates/${tpl}`), new RegExp(`automation flow ${flow.id}`));
    await flow.drop();
    expect(fake.requests.filter((r) => r.method === 'DELETE')).toHaveLength(0);
    expect((await a('DELETE', `/api/templates/${tpl}`)).status).toBe(204); // sandbox: nothing kept at the provider
  });

  it('a provider refusal answers 502 and keeps the template', async () => {
    const tpl = await providerTemplate('refused_one');
    fake.fail('server-error', { method: 'DELETE', times: 5 });
    const res = await api({ key: t.key })('DELETE', `/api/templates/${tpl.id}`);
    expect(res.status).toBe(502);
    expect(res.body.type).toBe(`${PROBLEM}provider-error`);
    expect(await app.platform.store.db.selectFrom('message_templates').select('id').where('id', '=', tpl.id).executeTakeFirst()).toBeDefined();
  });
});
