// Erasing a contact (GDPR): its messages, chat, automation executions, form submissions, webhook
// events still in the outbox and replayable send answers go in one transaction; the erasure is
// logged with counts and never the erased data; another workspace's contact of the same number,
// and another workspace's request, change nothing (B3).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { call, workspace, type Workspace } from '../campaigns/support.js';

let app: FastifyInstance;
let a: Workspace;
let b: Workspace;
const PHONE = '+4915180000001';

beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  [a, b] = [await workspace(app), await workspace(app)];
}, 120_000);

async function writes(w: Workspace, text: string) {
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  const pn = await app.platform.store.db.selectFrom('phone_numbers').select('provider_phone_number_id').where('id', '=', w.numberId).executeTakeFirstOrThrow();
  await sandbox.simulateInbound({
    phoneNumberId: pn.provider_phone_number_id,
    from: PHONE,
    name: 'Lena Secret',
    message: { type: 'text', text: { body: text } },
  });
}

/** A contact with a trace in every table that holds contact data. */
async function traces(w: Workspace) {
  const db = app.platform.store.db;
  await writes(w, 'Hello, my address is Rua Secreta 12');
  const contact = await db.selectFrom('contacts').select(['id']).where('workspace_id', '=', w.workspaceId).where('phone', '=', PHONE).executeTakeFirstOrThrow();
  const sent = await call(app, w.key)('POST', '/api/chatapp/send', {
    contact_no: PHONE,
    chatapp_phone_number: w.phone,
    messageType: 'text',
    message: 'Hi Lena',
  });
  expect(sent.statusCode, sent.body).toBe(201);
  const now = new Date();
  const flowId = newId('flw');
  await db
    .insertInto('automation_flows')
    .values({
      id: flowId,
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      phone_number_id: null,
      name: 'F',
      description: null,
      status: 'active',
      version: 1,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('automation_executions')
    .values({
      id: newId('exe'),
      workspace_id: w.workspaceId,
      flow_id: flowId,
      flow_version: 1,
      contact_id: contact.id,
      phone_number_id: w.numberId,
      trigger_id: 't1',
      status: 'completed',
      vars: JSON.stringify({ address: 'Rua Secreta 12' }),
      started_at: now,
    })
    .execute();
  const formId = newId('frm');
  await db
    .insertInto('forms')
    .values({
      id: formId,
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      name: `f${formId}`,
      category: 'OTHER',
      title: 'T',
      submit_label: 'Send',
      fields: JSON.stringify([]),
      provider_flow_id: newId('pf'),
      flow_status: 'PUBLISHED',
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('form_submissions')
    .values({
      id: newId('fs'),
      workspace_id: w.workspaceId,
      form_id: formId,
      contact_id: contact.id,
      message_id: newId('msg'),
      answers: JSON.stringify({ email: 'lena@secret.example' }),
      created_at: now,
    })
    .execute();
  await db
    .insertInto('outbox')
    .values({
      id: newId('obx'),
      workspace_id: w.workspaceId,
      endpoint_kind: 'webhook',
      endpoint_id: 'we_x',
      event_id: newId('evt'),
      event_type: 'message.received',
      payload: JSON.stringify({ data: { contact: { id: contact.id, contact_no: PHONE, name: 'Lena Secret' } } }),
    })
    .execute();
  await db
    .insertInto('send_idempotency')
    .values({
      workspace_id: w.workspaceId,
      key: newId('idem'),
      request_digest: 'd',
      status_code: 201,
      response: JSON.stringify({ contact_id: contact.id, contact_no: PHONE }),
    })
    .execute();
  return contact.id;
}

async function left(workspaceId: string, contactId: string) {
  const db = app.platform.store.db;
  const n = async (q: { executeTakeFirstOrThrow(): Promise<{ n: unknown }> }) => Number((await q.executeTakeFirstOrThrow()).n);
  const count = (table: 'messages' | 'chats' | 'automation_executions' | 'form_submissions' | 'contacts') =>
    n(
      db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', workspaceId),
    );
  return {
    contacts: await count('contacts'),
    messages: await count('messages'),
    chats: await count('chats'),
    executions: await count('automation_executions'),
    form_submissions: await count('form_submissions'),
    outbox: await n(
      db
        .selectFrom('outbox')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('payload', 'like', `%${contactId}%`),
    ),
    idempotency: await n(
      db
        .selectFrom('send_idempotency')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', workspaceId),
    ),
  };
}

describe('deleteContact', () => {
  it('erases the contact and its data everywhere, logs counts only, leaves the other workspace alone', async () => {
    const id = await traces(a);
    const otherId = await traces(b);
    const otherBefore = await left(b.workspaceId, otherId);
    expect(await left(a.workspaceId, id)).toEqual({ contacts: 1, messages: 2, chats: 1, executions: 1, form_submissions: 1, outbox: 1, idempotency: 1 });

    // B3: another workspace's id is unknown there, and nothing changes.
    expect((await call(app, b.key)('DELETE' as 'GET', `/api/contacts/${id}`)).statusCode).toBe(404);
    expect((await left(a.workspaceId, id)).messages).toBe(2);

    const res = await call(app, a.key)('DELETE' as 'GET', `/api/contacts/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    const erasure = res.json();
    expect(erasure).toMatchObject({
      contact_id: id,
      counts: { messages: 2, chats: 1, executions: 1, form_submissions: 1, campaign_recipients: 0, webhook_events: 1, other: 1 },
    });
    expect(erasure.id).toMatch(/^era_/);
    expect(erasure.erased_by).toMatch(/^key_/);
    for (const secret of [PHONE, PHONE.slice(1), 'Lena', 'Secreta', 'secret.example']) expect(res.body).not.toContain(secret);

    expect(await left(a.workspaceId, id)).toEqual({ contacts: 0, messages: 0, chats: 0, executions: 0, form_submissions: 0, outbox: 0, idempotency: 0 });
    expect((await call(app, a.key)('GET', `/api/contacts/${id}`)).statusCode).toBe(404);
    expect((await call(app, a.key)('DELETE' as 'GET', `/api/contacts/${id}`)).statusCode).toBe(404);
    expect(await left(b.workspaceId, otherId)).toEqual(otherBefore);

    const log = await call(app, a.key)('GET', '/api/contacts/erasures');
    expect(log.statusCode).toBe(200);
    expect(log.json().data).toEqual([erasure]);
    expect((await call(app, b.key)('GET', '/api/contacts/erasures')).json().data).toEqual([]);
    // The customer may write again: a new contact, with none of the old data.
    await writes(a, 'Hi again');
    const again = (await call(app, a.key)('GET', `/api/contacts?q=${encodeURIComponent(PHONE)}`)).json().data;
    expect(again).toHaveLength(1);
    expect(again[0].id).not.toBe(id);
  });

  it('erases the files the customer sent: the sandbox bytes and the cached download', async () => {
    const w = await workspace(app);
    const sandbox = app.platform.provider('sandbox') as SandboxProvider;
    const db = app.platform.store.db;
    const pn = await db.selectFrom('phone_numbers').select('provider_phone_number_id').where('id', '=', w.numberId).executeTakeFirstOrThrow();
    const sent = await sandbox.simulateInbound({
      phoneNumberId: pn.provider_phone_number_id,
      from: '+4915180000021',
      message: { type: 'image', media: { mime_type: 'image/png', caption: 'my passport' }, bytes: randomBytes(512) },
    });
    const message = await db
      .selectFrom('messages')
      .select(['id', 'contact_id', 'content'])
      .where('provider_message_id', '=', sent.providerMessageId)
      .executeTakeFirstOrThrow();
    const mediaId = (message.content as { media: { provider_media_id: string } }).media.provider_media_id;
    const download = await call(app, w.key)('GET', `/api/chatapp/messages/${message.id}/media`);
    expect(download.statusCode, download.body).toBe(200);
    const cacheKey = `${w.workspaceId}/${message.id}`;
    expect(await app.inboundMediaCache.get(cacheKey)).not.toBeNull();

    expect((await call(app, w.key)('DELETE' as 'GET', `/api/contacts/${message.contact_id}`)).statusCode).toBe(200);
    expect(await db.selectFrom('sandbox_media').select('provider_media_id').where('provider_media_id', '=', mediaId).executeTakeFirst()).toBeUndefined();
    expect(await app.inboundMediaCache.get(cacheKey)).toBeNull();
  });

  it('pages the erasure log with cursors of its own; bad ids and cursors are 400', async () => {
    const w = await workspace(app);
    for (const phone of ['+4915180000011', '+4915180000012', '+4915180000013']) {
      const created = await call(app, w.key)('POST', '/api/contacts', { contact_no: phone });
      expect((await call(app, w.key)('DELETE' as 'GET', `/api/contacts/${created.json().id}`)).statusCode).toBe(200);
    }
    const first = (await call(app, w.key)('GET', '/api/contacts/erasures?limit=2')).json();
    expect(first.data).toHaveLength(2);
    const rest = (await call(app, w.key)('GET', `/api/contacts/erasures?limit=2&cursor=${first.next_cursor}`)).json();
    expect(rest.data).toHaveLength(1);
    expect((await call(app, a.key)('GET', `/api/contacts/erasures?cursor=${first.next_cursor}`)).statusCode).toBe(400);
    expect((await call(app, w.key)('DELETE' as 'GET', `/api/contacts/${'x'.repeat(300)}`)).statusCode).toBe(400);
  });
});
