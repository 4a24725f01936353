// The inbox: chats kept by the inbound webhook and by sends, unread counts and read marks,
// a contact's messages with cursors, assignment to an agent, and the Messaging webhook events
// (message.received, message.status_updated) written to the outbox with the row change.
// Isolation: bad-inputs B1 (chat ids in paths), bad-inputs B2 (contact_id filter), bad-inputs B3 (agent ids), bad-inputs B6 (cursors).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { counts, customerWrites, PROBLEMS, sandbox, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
  b = await tenant(app);
}, 240_000);

const get = (t: Tenant, url: string) => app.inject({ method: 'GET', url, headers: t.headers });
const post = (t: Tenant, url: string, payload?: object) => app.inject({ method: 'POST', url, headers: t.headers, ...(payload ? { payload } : {}) });

async function subscribe(t: Tenant, types: string[]) {
  await app.platform.store.db
    .insertInto('webhook_endpoints')
    .values({
      id: newId('we'),
      workspace_id: t.workspaceId,
      api: 'messaging',
      url: 'https://receiver.invalid/hook',
      event_types: types,
      secret_enc: app.platform.secrets.encrypt('whsec_test'),
    })
    .execute();
}
async function outboxEvents(t: Tenant, type: string) {
  const rows = await app.platform.store.db
    .selectFrom('outbox')
    .select('payload')
    .where('workspace_id', '=', t.workspaceId)
    .where('event_type', '=', type)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => JSON.parse(r.payload));
}

describe('listChats and markChatRead', () => {
  it('threads newest first with unread counts, last message preview and the window; read resets the count', async () => {
    const t = await tenant(app);
    await customerWrites(app, t, '+4915112340011', 'First customer, one', 60_000);
    await customerWrites(app, t, '+4915112340011', 'First customer, two', 50_000);
    await customerWrites(app, t, '+4915112340022', 'Second customer', 10_000);
    const res = await get(t, '/api/chatapp/chats');
    expect(res.statusCode, res.body).toBe(200);
    const chats = res.json().data;
    expect(chats.map((c: any) => [c.contact.contact_no, c.unread_count])).toEqual([
      ['+4915112340022', 1],
      ['+4915112340011', 2],
    ]);
    expect(chats[1].last_message).toMatchObject({ direction: 'inbound', type: 'text', preview: 'First customer, two', status: 'received' });
    expect(chats[1].contact.name).toBe('Lena');
    expect(chats[1].chatapp_phone_number).toBe(t.number);
    expect(new Date(chats[0].window_expires_at).getTime()).toBeGreaterThan(Date.now());
    expect((await get(t, '/api/chatapp/chats?unread_only=true')).json().data).toHaveLength(2);

    const read = await post(t, `/api/chatapp/chats/${chats[1].id}/read`);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().unread_count).toBe(0);
    expect((await get(t, '/api/chatapp/chats?unread_only=true')).json().data.map((c: any) => c.id)).toEqual([chats[0].id]);

    // A send moves the chat to the top and leaves unread counts alone.
    const sent = await post(t, '/api/chatapp/send', { contact_no: '+4915112340011', chatapp_phone_number: t.number, messageType: 'text', message: 'Thanks!' });
    expect(sent.statusCode).toBe(201);
    expect(sent.json().chat_id).toBe(chats[1].id);
    const after = (await get(t, '/api/chatapp/chats')).json().data;
    expect(after[0]).toMatchObject({ id: chats[1].id, unread_count: 0, last_message: { direction: 'outbound', preview: 'Thanks!' } });
    await sandbox(app).idle();
  });

  it('cursor pages; B6 a cursor of another workspace or list: 400', async () => {
    const t = await tenant(app);
    for (let i = 0; i < 3; i++) await customerWrites(app, t, `+491511234010${i}`, `m${i}`, 30_000 - i * 1000);
    const p1 = (await get(t, '/api/chatapp/chats?limit=2')).json();
    expect(p1.data).toHaveLength(2);
    expect(p1.has_more).toBe(true);
    const p2 = (await get(t, `/api/chatapp/chats?limit=2&cursor=${p1.next_cursor}`)).json();
    expect(p2.data.map((c: any) => c.contact.contact_no)).toEqual(['+4915112340100']);
    expect(p2.has_more).toBe(false);
    expect((await get(b, `/api/chatapp/chats?cursor=${p1.next_cursor}`)).statusCode).toBe(400);
    const contact = p1.data[0].contact.id;
    expect((await get(t, `/api/chatapp/messages?contact_id=${contact}&cursor=${p1.next_cursor}`)).statusCode).toBe(400);
  });

  it("B5 lists show only the caller's chats", async () => {
    await customerWrites(app, a, '+4915112340033', 'for A');
    const listed = (await get(b, '/api/chatapp/chats')).json().data;
    expect(listed.some((c: any) => c.contact.contact_no === '+4915112340033')).toBe(false);
  });

  it("B1 marking another workspace's chat read: 404, same body as an unknown id, nothing changed", async () => {
    await customerWrites(app, a, '+4915112340044', 'unread for A');
    const chat = (await get(a, '/api/chatapp/chats')).json().data.find((c: any) => c.contact.contact_no === '+4915112340044');
    const before = await counts(app);
    const theirs = await post(b, `/api/chatapp/chats/${chat.id}/read`);
    const unknown = await post(b, '/api/chatapp/chats/chat_00000000000000000000/read');
    expect(theirs.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    const strip = (x: any) => ({ ...x, detail: x.detail.replace(/chat_\w+/, 'X'), instance: undefined, request_id: undefined });
    expect(strip(theirs.json())).toEqual(strip(unknown.json()));
    expect(await counts(app)).toEqual(before);
    expect((await get(a, '/api/chatapp/chats')).json().data.find((c: any) => c.id === chat.id).unread_count).toBe(1);
  });

  it('B8 malformed chat ids: 400 or 404, never 500', async () => {
    for (const id of ['abc', 'x'.repeat(500), 'chat_%00']) {
      const res = await post(a, `/api/chatapp/chats/${id}/read`);
      expect([400, 404]).toContain(res.statusCode);
    }
  });
});

describe('listMessages', () => {
  it("a contact's messages newest first, both directions, with statuses and times; direction filter", async () => {
    const t = await tenant(app);
    const phone = '+4915112340055';
    await customerWrites(app, t, phone, 'Do you have it in blue?', 5000);
    const sent = await post(t, '/api/chatapp/send', { contact_no: phone, chatapp_phone_number: t.number, messageType: 'text', message: 'Yes!' });
    await sandbox(app).idle();
    const res = await get(t, `/api/chatapp/messages?contact_id=${sent.json().contact_id}`);
    expect(res.statusCode, res.body).toBe(200);
    const [out, inb] = res.json().data;
    expect(out).toMatchObject({
      id: sent.json().id,
      direction: 'outbound',
      status: 'read',
      content: { text: 'Yes!' },
      chat_id: sent.json().chat_id,
      chatapp_phone_number: t.number,
    });
    expect(out.read_at).not.toBeNull();
    expect(inb).toMatchObject({
      direction: 'inbound',
      status: 'received',
      content: { text: 'Do you have it in blue?' },
      wamid: expect.stringMatching(/^wamid\./),
    });
    expect((await get(t, `/api/chatapp/messages?contact_id=${sent.json().contact_id}&direction=inbound`)).json().data).toHaveLength(1);
  });

  it("B2 another workspace's contact id as the filter: 404 naming contact_id", async () => {
    await customerWrites(app, a, '+4915112340066', 'hi');
    const contact = await app.platform.store.db
      .selectFrom('contacts')
      .select('id')
      .where('workspace_id', '=', a.workspaceId)
      .where('phone', '=', '+4915112340066')
      .executeTakeFirstOrThrow();
    const res = await get(b, `/api/chatapp/messages?contact_id=${contact.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    expect(res.json().errors[0].pointer).toBe('/query/contact_id');
  });

  it('H9 limit -1, 0, 1.5, abc, 10^9: 400; H10 an edited cursor: 400', async () => {
    await customerWrites(app, a, '+4915112340077', 'hi');
    const contact = await app.platform.store.db
      .selectFrom('contacts')
      .select('id')
      .where('workspace_id', '=', a.workspaceId)
      .where('phone', '=', '+4915112340077')
      .executeTakeFirstOrThrow();
    for (const limit of ['-1', '0', '1.5', 'abc', '1000000000']) {
      expect((await get(a, `/api/chatapp/messages?contact_id=${contact.id}&limit=${limit}`)).statusCode).toBe(400);
    }
    expect((await get(a, `/api/chatapp/messages?contact_id=${contact.id}&cursor=eyJ0IjoxfQ.AAAA`)).statusCode).toBe(400);
  });
});

describe('assignChat', () => {
  it('to an owner of the workspace, then unassigned; filter by agent', async () => {
    await customerWrites(app, a, '+4915112340088', 'assign me');
    const chat = (await get(a, '/api/chatapp/chats')).json().data.find((c: any) => c.contact.contact_no === '+4915112340088');
    const res = await post(a, '/api/chatapp/assign-chat', { chat_id: chat.id, agent_id: a.ownerId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().assigned_agent_id).toBe(a.ownerId);
    expect((await get(a, `/api/chatapp/chats?assigned_agent_id=${a.ownerId}`)).json().data.map((c: any) => c.id)).toEqual([chat.id]);
    const off = await post(a, '/api/chatapp/assign-chat', { chat_id: chat.id, agent_id: null });
    expect(off.json().assigned_agent_id).toBeNull();
  });

  it("B3 another workspace's agent: 404 naming agent_id; another workspace's chat: 404; nothing changed", async () => {
    await customerWrites(app, a, '+4915112340099', 'assign me too');
    const chat = (await get(a, '/api/chatapp/chats')).json().data.find((c: any) => c.contact.contact_no === '+4915112340099');
    const agent = await post(a, '/api/chatapp/assign-chat', { chat_id: chat.id, agent_id: b.ownerId });
    expect(agent.statusCode).toBe(404);
    expect(agent.json().errors[0].pointer).toBe('/body/agent_id');
    const foreign = await post(b, '/api/chatapp/assign-chat', { chat_id: chat.id, agent_id: b.ownerId });
    expect(foreign.statusCode).toBe(404);
    const row = await app.platform.store.db.selectFrom('chats').select('assigned_owner_id').where('id', '=', chat.id).executeTakeFirstOrThrow();
    expect(row.assigned_owner_id).toBeNull();
  });

  it('a member of the workspace without an agent role: 404 naming agent_id, as listAgents does not list them', async () => {
    await customerWrites(app, a, '+4915112340098', 'not for a viewer');
    const chat = (await get(a, '/api/chatapp/chats')).json().data.find((c: any) => c.contact.contact_no === '+4915112340098');
    const viewerId = newId('usr');
    await app.platform.store.db
      .insertInto('owners')
      .values({
        id: viewerId,
        workspace_id: a.workspaceId,
        email: `${viewerId.toLowerCase()}@example.test`,
        name: 'Viewer',
        password_hash: 'x',
        role: 'viewer',
        created_at: new Date(),
      })
      .execute();
    const res = await post(a, '/api/chatapp/assign-chat', { chat_id: chat.id, agent_id: viewerId });
    expect(res.statusCode).toBe(404);
    expect(res.json().errors[0].pointer).toBe('/body/agent_id');
    const row = await app.platform.store.db.selectFrom('chats').select('assigned_owner_id').where('id', '=', chat.id).executeTakeFirstOrThrow();
    expect(row.assigned_owner_id).toBeNull();
  });
});

describe('Messaging webhook events', () => {
  it('message.received: one event per inbound message, with the message, contact and window', async () => {
    const t = await tenant(app);
    await subscribe(t, ['message.received']);
    const { providerMessageId } = await customerWrites(app, t, '+4915112340111', 'Hello events');
    const events = await outboxEvents(t, 'message.received');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'message.received',
      workspace_id: t.workspaceId,
      data: {
        message: { wamid: providerMessageId, type: 'text', content: { text: 'Hello events' }, chatapp_phone_number: t.number, reply_to: null },
        contact: { contact_no: '+4915112340111', profile_name: 'Lena' },
      },
    });
    expect(events[0].data.message.chat_id).toMatch(/^chat_/);
  });

  it('message.status_updated: sent, delivered, read of a send, each with the previous status (E7: forward only)', async () => {
    const t = await tenant(app);
    await subscribe(t, ['message.status_updated']);
    await customerWrites(app, t, '+4915112340122', 'hi');
    const sent = await post(t, '/api/chatapp/send', {
      contact_no: '+4915112340122',
      chatapp_phone_number: t.number,
      messageType: 'text',
      message: 'status me',
    });
    expect(sent.statusCode).toBe(201);
    await sandbox(app).idle();
    const events = await outboxEvents(t, 'message.status_updated');
    expect(events.map((e) => [e.data.previous_status, e.data.status])).toEqual([
      ['accepted', 'sent'],
      ['sent', 'delivered'],
      ['delivered', 'read'],
    ]);
    expect(events[0].data).toMatchObject({ message_id: sent.json().id, chat_id: sent.json().chat_id, contact_no: '+4915112340122', error: null });
  });
});
