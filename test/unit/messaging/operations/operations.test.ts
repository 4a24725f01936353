// Operations on the sandbox: usage counted from real activity (a message sent, a contact
// created, a Login session started) against the plan, the agents of a workspace, and kanban
// funnels filling up as contacts write in; each bad input once, and another workspace's ids
// answering 404 like unknown ones (bad-inputs B3).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { buildShared } from '#test/helper.js';
import { customerWrites, sandbox, tenant, type Tenant } from '../inbox/support.js';
import { apply, CLINIC, eventually } from '../packs/support.js';
import { loginTenant, member, PROBLEMS, type LoginTenant } from './support.js';

let app: FastifyInstance;
let a: LoginTenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await loginTenant(app, 50);
  b = await tenant(app);
}, 240_000);

const get = (t: Tenant | null, url: string) => app.inject({ method: 'GET', url, headers: t ? t.headers : {} });

async function badRequest(t: Tenant, url: string, pointer?: string) {
  const res = await get(t, url);
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().type).toBe(`${PROBLEMS}validation`);
  if (pointer) expect(res.json().errors?.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  return res.json();
}

describe('getUsage', () => {
  const usage = async (t: Tenant) => {
    const res = await get(t, '/api/subscriptions/usage');
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const CUSTOMER = '+4915112340001';

  it('a new workspace: the free plan, this calendar month, nothing used', async () => {
    const t = await loginTenant(app);
    const u = await usage(t);
    const now = new Date();
    expect(u.plan).toEqual({ code: 'free', name: 'Free' });
    expect(u.period).toEqual({
      start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    });
    expect(u.counters).toEqual({
      messages: { used: 0, limit: 1000, remaining: 1000 },
      contacts: { used: 0, limit: 1000, remaining: 1000 },
      login_sessions: { used: 0, limit: 1000, remaining: 1000 },
    });
    expect(u.upgrade_url).toMatch(/\/account\/usage$/);
    expect(Math.abs(Date.parse(u.as_of) - Date.now())).toBeLessThan(60_000);
  });

  it('moves with real activity: a customer writing in (a contact), a message sent through the sandbox, a contact created, a Login session started', async () => {
    const start = (await usage(a)).counters;

    await customerWrites(app, a, CUSTOMER, 'Hello');
    await eventually(async () => (await usage(a)).counters.contacts.used === start.contacts.used + 1);
    // An inbound message is not a message sent.
    expect((await usage(a)).counters.messages.used).toBe(start.messages.used);

    const sent = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: a.headers,
      payload: { contact_no: CUSTOMER, chatapp_phone_number: a.number, messageType: 'text', message: 'Hi!' },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    await sandbox(app).idle();
    let c = (await usage(a)).counters;
    expect(c.messages).toEqual({ used: start.messages.used + 1, limit: 1000, remaining: 1000 - start.messages.used - 1 });

    const contact = await app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload: { contact_no: '+4915112340002', name: 'Ana' } });
    expect(contact.statusCode, contact.body).toBe(201);
    c = (await usage(a)).counters;
    expect(c.contacts.used).toBe(start.contacts.used + 2);

    const session = await app.inject({
      method: 'POST',
      url: '/v1/auth/chatapp/start',
      headers: { 'x-api-key': a.loginKey, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(session.statusCode, session.body).toBe(201);
    c = (await usage(a)).counters;
    // The Login cap is the workspace's own (50 here), the one the Login API enforces.
    expect(c.login_sessions).toEqual({ used: start.login_sessions.used + 1, limit: 50, remaining: 50 - start.login_sessions.used - 1 });
  });

  it('a send refused (outside the 24-hour window) is not counted', async () => {
    const before = (await usage(a)).counters.messages.used;
    const res = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: a.headers,
      payload: { contact_no: '+4915112349999', chatapp_phone_number: a.number, messageType: 'text', message: 'Hi' },
    });
    expect(res.statusCode).toBe(422);
    expect((await usage(a)).counters.messages.used).toBe(before);
  });

  it('messages of an earlier month are not counted; contacts are (they are stored now)', async () => {
    const t = await loginTenant(app);
    await customerWrites(app, t, CUSTOMER, 'Hello');
    await eventually(async () => (await usage(t)).counters.contacts.used === 1);
    const sent = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: t.headers,
      payload: { contact_no: CUSTOMER, chatapp_phone_number: t.number, messageType: 'text', message: 'Hi!' },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    expect((await usage(t)).counters.messages.used).toBe(1);
    const lastMonth = new Date(Date.parse((await usage(t)).period.start) - 86_400_000);
    // created_at is never updated by the API (its type forbids it): moved back in SQL.
    await sql`update messages set created_at = ${lastMonth} where id = ${sent.json().id}`.execute(app.platform.store.db);
    const c = (await usage(t)).counters;
    expect(c.messages.used).toBe(0);
    expect(c.contacts.used).toBe(1);
  });

  it("another workspace's activity is not counted (B3)", async () => {
    const before = (await usage(a)).counters;
    await customerWrites(app, b, '+4915112340003', 'Hello');
    const sent = await eventually(async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/chatapp/send',
        headers: b.headers,
        payload: { contact_no: '+4915112340003', chatapp_phone_number: b.number, messageType: 'text', message: 'Hi' },
      });
      return res.statusCode === 201 && res;
    });
    expect(sent.statusCode).toBe(201);
    expect((await usage(a)).counters).toEqual(before);
    expect((await usage(b)).counters.messages.used).toBeGreaterThan(0);
  });

  it('the limits follow the plan: enterprise is unlimited (limit and remaining null); remaining never goes below 0', async () => {
    const t = await loginTenant(app, 1);
    const db = app.platform.store.db;
    await db.updateTable('workspaces').set({ plan: 'enterprise' }).where('id', '=', t.workspaceId).execute();
    let u = await usage(t);
    expect(u.plan).toEqual({ code: 'enterprise', name: 'Enterprise' });
    expect(u.counters.messages).toEqual({ used: 0, limit: null, remaining: null });
    expect(u.counters.contacts).toEqual({ used: 0, limit: null, remaining: null });

    await db.updateTable('workspaces').set({ plan: 'starter', login_session_cap: 0 }).where('id', '=', t.workspaceId).execute();
    const session = await app.inject({
      method: 'POST',
      url: '/v1/auth/chatapp/start',
      headers: { 'x-api-key': t.loginKey, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(session.statusCode).toBe(402);
    await db.updateTable('workspaces').set({ login_session_cap: 1 }).where('id', '=', t.workspaceId).execute();
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/auth/chatapp/start',
          headers: { 'x-api-key': t.loginKey, 'content-type': 'application/json' },
          payload: '{}',
        })
      ).statusCode,
    ).toBe(201);
    await db.updateTable('workspaces').set({ login_session_cap: 0 }).where('id', '=', t.workspaceId).execute();
    u = await usage(t);
    expect(u.plan).toEqual({ code: 'starter', name: 'Starter' });
    expect(u.counters.messages.limit).toBe(10_000);
    expect(u.counters.login_sessions).toEqual({ used: 1, limit: 0, remaining: 0 });
  });

  it('A1 no credential: 401 with the Messaging challenge', async () => {
    const res = await get(null, '/api/subscriptions/usage');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('ApiKey realm="messaging"');
  });

  it('A1 a Login app key is no Messaging credential: 401', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/subscriptions/usage', headers: { 'x-api-key': a.loginKey } });
    expect(res.statusCode).toBe(401);
  });
});

describe('listAgents', () => {
  let t: Tenant;
  let ana: string;
  let zoe: string;
  const agents = async (who: Tenant, query = '') => {
    const res = await get(who, `/api/agent/all${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    t = await tenant(app);
    zoe = await member(app, t.workspaceId, 'Zoe Martins', 'agent', false);
    ana = await member(app, t.workspaceId, 'Ana Ribeiro', 'agent');
    // A member whose role does not take chats.
    await member(app, t.workspaceId, 'Bruno Viewer', 'viewer');
    await member(app, b.workspaceId, 'Other Workspace Agent', 'agent');
  });

  it('lists the owner and the agents by name, with availability and open chats; other roles and workspaces are left out', async () => {
    await customerWrites(app, t, '+4915112340010', 'Hello');
    const chat = await eventually(() => app.platform.store.db.selectFrom('chats').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirst());
    const assigned = await app.inject({ method: 'POST', url: '/api/chatapp/assign-chat', headers: t.headers, payload: { chat_id: chat.id, agent_id: ana } });
    expect(assigned.statusCode, assigned.body).toBe(200);

    const page = await agents(t);
    expect(page.has_more).toBe(false);
    expect(page.next_cursor).toBeNull();
    expect(page.data.map((x: { name: string }) => x.name)).toEqual(['Ana Ribeiro', 'Owner', 'Zoe Martins']);
    const [first, , last] = page.data;
    expect(first).toMatchObject({ id: ana, status: 'active', available: true, open_chats: 1, last_seen_at: null });
    expect(first.email).toMatch(/@example\.test$/);
    expect(last).toMatchObject({ id: zoe, available: false, open_chats: 0 });
    expect(Number.isNaN(Date.parse(first.created_at))).toBe(false);
  });

  it('pages with limit and the signed cursor', async () => {
    const one = await agents(t, '?limit=2');
    expect(one.data.map((x: { name: string }) => x.name)).toEqual(['Ana Ribeiro', 'Owner']);
    expect(one.has_more).toBe(true);
    const two = await agents(t, `?limit=2&cursor=${encodeURIComponent(one.next_cursor)}`);
    expect(two.data.map((x: { name: string }) => x.name)).toEqual(['Zoe Martins']);
    expect(two.has_more).toBe(false);
  });

  it('status=active lists them; invited and disabled list nobody (every stored member is active)', async () => {
    expect((await agents(t, '?status=active')).data).toHaveLength(3);
    expect((await agents(t, '?status=invited')).data).toEqual([]);
    expect((await agents(t, '?status=disabled')).data).toEqual([]);
  });

  it('B1 status outside the enum: 400 naming it', async () => {
    await badRequest(t, '/api/agent/all?status=away', '/query/status');
  });

  it('H4 limit 0: 400', async () => {
    await badRequest(t, '/api/agent/all?limit=0', '/query/limit');
  });

  it('H4 limit 101: 400', async () => {
    await badRequest(t, '/api/agent/all?limit=101', '/query/limit');
  });

  it('B1 limit not a number: 400', async () => {
    await badRequest(t, '/api/agent/all?limit=ten', '/query/limit');
  });

  it('a tampered cursor: 400', async () => {
    await badRequest(t, '/api/agent/all?cursor=not-a-cursor');
  });

  it('B3 a cursor of another workspace: 400, it leaks nothing', async () => {
    const theirs = await agents(b, '?limit=1');
    expect(theirs.has_more).toBe(true);
    await badRequest(t, `/api/agent/all?cursor=${encodeURIComponent(theirs.next_cursor)}`);
  });

  it('A1 no credential: 401', async () => {
    expect((await get(null, '/api/agent/all')).statusCode).toBe(401);
  });
});

describe('listKanbanFunnels', () => {
  let t: Tenant;
  let funnelId: string;
  const funnels = async (who: Tenant, query = '') => {
    const res = await get(who, `/api/kanban-funnels${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    t = await tenant(app);
    const applied = await apply(app, t, { ...CLINIC, waba_id: t.wabaId });
    expect(applied.statusCode, applied.body).toBe(200);
    funnelId = applied.json().created.funnels[0].id;
  });

  it('a funnel from a pack: its stages left to right, empty until a contact writes', async () => {
    const page = await funnels(t);
    expect(page.data).toHaveLength(1);
    const f = page.data[0];
    expect(f).toMatchObject({ id: funnelId, name: 'Patients', waba_id: t.wabaId });
    expect(f.stages.map((s: { id: string; position: number; chat_count: number }) => [s.id, s.position, s.chat_count])).toEqual([
      ['new_lead', 0, 0],
      ['booked', 1, 0],
      ['treated', 2, 0],
    ]);
  });

  it('a contact writing in puts the chat in the first stage, once however often they write', async () => {
    await customerWrites(app, t, '+4915112340020', 'Hello');
    const stage = await eventually(async () => {
      const s = (await funnels(t)).data[0].stages[0];
      return s.chat_count === 1 && s;
    });
    const chat = await app.platform.store.db.selectFrom('chats').selectAll().where('workspace_id', '=', t.workspaceId).executeTakeFirstOrThrow();
    expect(stage.chats).toEqual([
      expect.objectContaining({ chat_id: chat.id, contact_id: chat.contact_id, contact_name: 'Lena', contact_no: '+4915112340020', assigned_agent_id: null }),
    ]);
    expect(Number.isNaN(Date.parse(stage.chats[0].entered_stage_at))).toBe(false);

    await customerWrites(app, t, '+4915112340020', 'Are you there?');
    await customerWrites(app, t, '+4915112340021', 'Hi');
    const two = await eventually(async () => {
      const s = (await funnels(t)).data[0].stages[0];
      return s.chat_count === 2 && s;
    });
    // Most recently entered first.
    expect(two.chats.map((c: { contact_no: string }) => c.contact_no)).toEqual(['+4915112340021', '+4915112340020']);
    const rows = await app.platform.store.db.selectFrom('kanban_placements').selectAll().where('funnel_id', '=', funnelId).execute();
    expect(rows).toHaveLength(2);
  });

  it('chats_per_stage cuts the chats listed, never the count; 0 lists none', async () => {
    await eventually(async () => (await funnels(t)).data[0].stages[0].chat_count === 2);
    const one = (await funnels(t, '?chats_per_stage=1')).data[0].stages[0];
    expect(one.chats).toHaveLength(1);
    expect(one.chat_count).toBe(2);
    const none = (await funnels(t, '?chats_per_stage=0')).data[0].stages[0];
    expect(none.chats).toEqual([]);
    expect(none.chat_count).toBe(2);
  });

  it("waba_id filters by business account (our id or the provider's); a funnel of another account gets none of its chats", async () => {
    const { createSandboxAccount } = await import('#server/providers/sandbox.js');
    const { account } = await createSandboxAccount(app.platform.store.db, t.workspaceId, { name: 'Second' });
    const other = await apply(app, t, { ...CLINIC, waba_id: account.id });
    expect(other.statusCode, other.body).toBe(200);
    await customerWrites(app, t, '+4915112340022', 'Hello');
    await eventually(async () => (await funnels(t, `?waba_id=${t.wabaId}`)).data[0].stages[0].chat_count === 3);

    const mine = await funnels(t, `?waba_id=${t.wabaId}`);
    expect(mine.data.map((f: { id: string }) => f.id)).toEqual([funnelId]);
    const theirs = await funnels(t, `?waba_id=${account.id}`);
    expect(theirs.data.map((f: { id: string }) => f.id)).toEqual([other.json().created.funnels[0].id]);
    expect(theirs.data[0].stages[0].chat_count).toBe(0);
    const byProvider = await funnels(t, `?waba_id=${account.provider_waba_id}`);
    expect(byProvider.data.map((f: { id: string }) => f.id)).toEqual([other.json().created.funnels[0].id]);

    // Newest first, paged with the signed cursor.
    const first = await funnels(t, '?limit=1');
    expect(first.data[0].id).toBe(other.json().created.funnels[0].id);
    expect(first.has_more).toBe(true);
    const second = await funnels(t, `?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`);
    expect(second.data[0].id).toBe(funnelId);
    expect(second.has_more).toBe(false);
  });

  it('another workspace sees none of these funnels', async () => {
    const page = await funnels(b);
    expect(page.data.some((f: { id: string }) => f.id === funnelId)).toBe(false);
  });

  it("B3 another workspace's business account: 404, the same body as an unknown one", async () => {
    const theirs = await get(t, `/api/kanban-funnels?waba_id=${b.wabaId}`);
    const unknown = await get(t, '/api/kanban-funnels?waba_id=waba_0000000000000000');
    expect(theirs.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(theirs.json().type).toBe(`${PROBLEMS}not-found`);
    const strip = (p: Record<string, unknown>) => ({ ...p, detail: undefined, instance: undefined, request_id: undefined });
    expect(strip(theirs.json())).toEqual(strip(unknown.json()));
  });

  it('a disconnected business account: 404 like an unknown one', async () => {
    const { createSandboxAccount } = await import('#server/providers/sandbox.js');
    const { account } = await createSandboxAccount(app.platform.store.db, t.workspaceId, { name: 'Gone' });
    expect((await get(t, `/api/kanban-funnels?waba_id=${account.id}`)).statusCode).toBe(200);
    await app.platform.store.db.updateTable('business_accounts').set({ disconnected_at: new Date() }).where('id', '=', account.id).execute();
    const res = await get(t, `/api/kanban-funnels?waba_id=${account.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
  });

  it('H4 chats_per_stage 101: 400', async () => {
    await badRequest(t, '/api/kanban-funnels?chats_per_stage=101', '/query/chats_per_stage');
  });

  it('H4 chats_per_stage -1: 400', async () => {
    await badRequest(t, '/api/kanban-funnels?chats_per_stage=-1', '/query/chats_per_stage');
  });

  it('B1 chats_per_stage not a number: 400', async () => {
    await badRequest(t, '/api/kanban-funnels?chats_per_stage=all', '/query/chats_per_stage');
  });

  it('H4 limit 0: 400', async () => {
    await badRequest(t, '/api/kanban-funnels?limit=0', '/query/limit');
  });

  it('a tampered cursor: 400', async () => {
    await badRequest(t, '/api/kanban-funnels?cursor=abc');
  });

  it('B3 a cursor of another workspace: 400', async () => {
    const c = await tenant(app);
    await apply(app, c, { ...CLINIC, waba_id: c.wabaId });
    const { createSandboxAccount } = await import('#server/providers/sandbox.js');
    const { account } = await createSandboxAccount(app.platform.store.db, c.workspaceId, { name: 'Second' });
    await apply(app, c, { ...CLINIC, waba_id: account.id });
    const theirs = await funnels(c, '?limit=1');
    expect(theirs.has_more).toBe(true);
    await badRequest(t, `/api/kanban-funnels?cursor=${encodeURIComponent(theirs.next_cursor)}`);
  });

  it('B8 waba_id malformed: 400', async () => {
    await badRequest(t, `/api/kanban-funnels?waba_id=${'x'.repeat(300)}`, '/query/waba_id');
  });

  it('A1 no credential: 401', async () => {
    expect((await get(null, '/api/kanban-funnels')).statusCode).toBe(401);
  });
});
