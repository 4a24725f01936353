// The campaign operations end to end on the sandbox provider: the create variants, list, get,
// and sending through the worker until the campaign completes, with delivery statuses reaching
// the progress counts.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { addContacts, call, recipientStates, tag, until, workspace, type Workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';
import { recordAccepted } from '#server/apis/messaging/outbound/record-and-send.js';
import { newId } from '#server/lib/ids.js';

let app: FastifyInstance;
beforeAll(async () => {
  // Statuses with their real (short) delays: the campaign's messages rows exist before they arrive.
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '1000' }, overrides: { sandboxTestMode: false } });
});

const base = (w: Workspace, extra: Record<string, unknown> = {}) => ({
  name: 'Store opening',
  chatapp_phone_number: w.phone,
  audience: { type: 'all_contacts' },
  template: { name: 'welcome_offer', language: 'en_US' },
  ...extra,
});

async function get(w: Workspace, id: string) {
  return (await call(app, w.key)('GET', `/api/campaigns/${id}`)).json();
}

describe('createCampaign', () => {
  it('all contacts: sends to each once, completes, statuses reach the counts, campaign.completed emitted', async () => {
    const w = await workspace(app);
    await addContacts(app.platform.store.db, w.workspaceId, 5);
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w));
    expect(res.statusCode).toBe(201);
    const c = res.json();
    expect(c).toMatchObject({ status: 'sending', chatapp_phone_number: w.phone, waba_id: w.accountId, progress: { total: 5, queued: 5 } });
    const done = await until(
      async () => {
        const v = await get(w, c.id);
        return v.status === 'completed' && v.progress.read === 5 && v;
      },
      15_000,
      'completion with reads',
    );
    expect(done.progress).toEqual({ total: 5, queued: 0, sent: 0, delivered: 0, read: 5, failed: 0, skipped: 0 });
    expect(done.finished_at).not.toBeNull();
    const messages = await app.platform.store.db.selectFrom('messages').select(['contact_id', 'status']).where('workspace_id', '=', w.workspaceId).execute();
    expect(new Set(messages.map((m) => m.contact_id)).size).toBe(5);
    expect(messages).toHaveLength(5);
  });

  it('specific contacts with contact-field variables: sends only to them', async () => {
    const w = await workspace(app);
    const ids = await addContacts(app.platform.store.db, w.workspaceId, 4);
    const body = base(w, {
      audience: { type: 'contacts', contact_ids: ids.slice(0, 2) },
      template: {
        name: 'order_shipped',
        language: 'en_US',
        header: { type: 'text', text: { from_contact: 'custom_fields.last_order', fallback: 'your order' } },
        body: [{ from_contact: 'name', fallback: 'there' }, '{{1}} literal', 'Friday'],
      },
    });
    const res = await call(app, w.key)('POST', '/api/campaigns', body);
    expect(res.statusCode).toBe(201);
    expect(res.json().progress.total).toBe(2);
    await until(async () => (await get(w, res.json().id)).status === 'completed', 10_000, 'completion');
    // What was sent is what is shown: the campaign named, the body with this contact's values.
    const listed = await call(app, w.key)('GET', `/api/chatapp/messages?contact_id=${ids[0]}`);
    expect(listed.statusCode, listed.body).toBe(200);
    const [m] = listed.json().data;
    expect(m).toMatchObject({ campaign_id: res.json().id, type: 'template', direction: 'outbound' });
    expect(m.content).toMatchObject({ text: 'Hi Contact 1, {{1}} literal ships Friday.', template: { name: 'order_shipped', language: 'en_US' } });
  });

  it("a campaign's messages are recorded in their chats: an existing one, else one made for the contact", async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const [fresh, known] = await addContacts(db, w.workspaceId, 2);
    const at = new Date();
    const existing = newId('chat');
    await db
      .insertInto('chats')
      .values({ id: existing, workspace_id: w.workspaceId, phone_number_id: w.numberId, contact_id: known!, last_message_at: at, created_at: at })
      .execute();
    const message = (contactId: string) => ({
      id: newId('msg'),
      workspaceId: w.workspaceId,
      phoneNumberId: w.numberId,
      contactId,
      type: 'template',
      content: { text: 'Hi' },
      providerMessageId: `wamid.${newId('x')}`,
      templateId: null,
      campaignId: newId('cmp'),
      at,
    });
    const sent = [message(fresh!), message(fresh!), message(known!)];
    await db.transaction().execute((trx) => recordAccepted(trx, sent));
    const rows = await db
      .selectFrom('messages')
      .select(['id', 'chat_id'])
      .where(
        'id',
        'in',
        sent.map((m) => m.id),
      )
      .execute();
    const chatOf = new Map(rows.map((r) => [r.id, r.chat_id]));
    const made = await db.selectFrom('chats').select('id').where('contact_id', '=', fresh!).execute();
    expect(made).toHaveLength(1);
    expect(sent.map((m) => chatOf.get(m.id))).toEqual([made[0]!.id, made[0]!.id, existing]);
  });

  it('scheduled by tags: waits for scheduled_at, then fires once', async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const ids = await addContacts(db, w.workspaceId, 3);
    await tag(db, w.workspaceId, 'vip', ids.slice(0, 2));
    const at = new Date(Date.now() + 1500).toISOString();
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w, { audience: { type: 'tags', tags: ['VIP'] }, scheduled_at: at }));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'scheduled', scheduled_at: at, started_at: null, progress: { total: 0 } });
    const done = await until(
      async () => {
        const v = await get(w, res.json().id);
        return v.status === 'completed' && v;
      },
      10_000,
      'scheduled completion',
    );
    expect(done.progress.total).toBe(2);
    expect(new Date(done.started_at).getTime()).toBeGreaterThanOrEqual(Date.parse(at));
  });

  it('with media, limited-time offer, dynamic coupon, media carousel: accepted and sent', async () => {
    const w = await workspace(app);
    await addContacts(app.platform.store.db, w.workspaceId, 2);
    const bodies = [
      {
        name: 'invoice_ready',
        language: 'en_US',
        header: { type: 'document', media_url: 'https://cdn.example.com/inv.pdf', filename: 'inv.pdf' },
        body: [{ from_contact: 'name', fallback: 'there' }, 'INV-1'],
      },
      {
        name: 'flash_sale',
        language: 'en_US',
        header: { type: 'image', media_url: 'https://cdn.example.com/sale.jpg' },
        body: [{ from_contact: 'name', fallback: 'there' }],
        limited_time_offer: { expires_at: new Date(Date.now() + 86_400_000).toISOString() },
        buttons: [{ type: 'copy_code', index: 0, coupon_code: 'FLASH30' }],
      },
      {
        name: 'black_friday_coupon',
        language: 'en_US',
        body: [{ from_contact: 'name', fallback: 'there' }, '25%'],
        buttons: [{ type: 'copy_code', index: 0, coupon_code: 'BF25' }],
      },
      {
        name: 'new_arrivals',
        language: 'en_US',
        body: [{ from_contact: 'name', fallback: 'there' }],
        carousel: {
          type: 'media',
          cards: [
            { header: { type: 'image', media_url: 'https://cdn.example.com/a.jpg' }, body: ['$89'] },
            { header: { type: 'image', media_url: 'https://cdn.example.com/b.jpg' }, body: ['$79'] },
          ],
        },
      },
    ];
    for (const template of bodies) {
      const res = await call(app, w.key)('POST', '/api/campaigns', base(w, { template }));
      expect(res.statusCode, template.name).toBe(201);
      await until(async () => (await get(w, res.json().id)).status === 'completed', 10_000, template.name);
    }
  });

  it('media carousel from uploads: media ids of the workspace are sent by provider id', async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    await addContacts(db, w.workspaceId, 1);
    const media = ['med_4Kp8Xq2NmT7vL3sR00', 'med_9Tx3Lq7KmN2vR8sW00'];
    for (const id of media) {
      await db
        .insertInto('uploaded_media')
        .values({
          id,
          workspace_id: w.workspaceId,
          phone_number_id: w.numberId,
          provider_media_id: `77${id.length}`,
          mime_type: 'image/jpeg',
          size_bytes: 1000,
        })
        .execute();
    }
    const template = {
      name: 'new_arrivals',
      language: 'en_US',
      body: ['x'],
      carousel: { type: 'media', cards: media.map((media_id) => ({ header: { type: 'image', media_id } })) },
    };
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w, { template }));
    expect(res.statusCode).toBe(201);
    await until(async () => (await get(w, res.json().id)).status === 'completed', 10_000, 'completion');
  });

  it('draft: stored, nothing sent until started', async () => {
    const w = await workspace(app);
    await addContacts(app.platform.store.db, w.workspaceId, 2);
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w, { draft: true }));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'draft', started_at: null, progress: { total: 0 } });
    await elapse(300, "absence: a draft queues no recipient on the worker's next pass");
    expect(await recipientStates(app.platform.store.db, res.json().id)).toEqual({});
    const started = await call(app, w.key)('POST', `/api/campaigns/${res.json().id}/start`);
    expect(started.statusCode).toBe(200);
    expect(started.json()).toMatchObject({ status: 'sending', progress: { total: 2 } });
    await until(async () => (await get(w, res.json().id)).status === 'completed', 10_000, 'completion');
  });

  it('an empty audience completes at once', async () => {
    const w = await workspace(app);
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'completed', progress: { total: 0 } });
  });

  it('unreachable recipients end failed with the provider code; the rest read', async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    await addContacts(db, w.workspaceId, 2);
    await db.insertInto('contacts').values({ id: 'ct_unreachable000000001', workspace_id: w.workspaceId, phone: '+4915123450000' }).execute();
    const res = await call(app, w.key)('POST', '/api/campaigns', base(w));
    const done = await until(
      async () => {
        const v = await get(w, res.json().id);
        return v.progress.failed === 1 && v.progress.read === 2 && v;
      },
      15_000,
      'statuses',
    );
    expect(done.status).toBe('completed');
    const failed = await db
      .selectFrom('campaign_recipients')
      .select(['phone', 'error'])
      .where('campaign_id', '=', done.id)
      .where('state', '=', 'failed')
      .execute();
    expect(failed).toEqual([{ phone: '+4915123450000', error: expect.objectContaining({ code: 131026 }) }]);
  });
});

describe("the provider caps on each recipient's message", () => {
  it('a recipient whose value makes the header longer than 60 characters fails too_long, unsent; the others are sent', async () => {
    const w = await workspace(app);
    const db = app.platform.store.db;
    const ids = await addContacts(db, w.workspaceId, 2);
    await db
      .updateTable('contacts')
      .set({ custom_fields: JSON.stringify({ last_order: 'x'.repeat(100) }) })
      .where('id', '=', ids[0]!)
      .execute();
    const res = await call(app, w.key)('POST', '/api/campaigns', {
      ...base(w),
      template: {
        name: 'order_shipped',
        language: 'en_US',
        header: { type: 'text', text: { from_contact: 'custom_fields.last_order', fallback: 'your order' } },
        body: [{ from_contact: 'name', fallback: 'there' }, 'it', 'Friday'],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const done = await until(
      async () => {
        const v = await get(w, res.json().id);
        return v.status === 'completed' && v.progress.failed === 1 && v.progress.read === 1 && v;
      },
      15_000,
      'one failed, one read',
    );
    const failed = await db
      .selectFrom('campaign_recipients')
      .select(['contact_id', 'error'])
      .where('campaign_id', '=', done.id)
      .where('state', '=', 'failed')
      .execute();
    expect(failed).toEqual([{ contact_id: ids[0], error: expect.objectContaining({ code: 'too_long', detail: 'template/header/text' }) }]);
    const messages = await db.selectFrom('messages').select('contact_id').where('campaign_id', '=', done.id).execute();
    expect(messages).toEqual([{ contact_id: ids[1] }]);
  });
});

describe('listCampaigns and getCampaign', () => {
  it('lists newest first with status filter and cursor pages', async () => {
    const w = await workspace(app);
    const api = call(app, w.key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api('POST', '/api/campaigns', base(w, { name: `c${i}`, draft: true }))).json().id);
    const page1 = await api('GET', '/api/campaigns?limit=2');
    expect(page1.statusCode).toBe(200);
    expect(page1.json().data.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
    expect(page1.json().has_more).toBe(true);
    const page2 = await api('GET', `/api/campaigns?limit=2&cursor=${page1.json().next_cursor}`);
    expect(page2.json().data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    await api('POST', `/api/campaigns/${ids[0]}/cancel`);
    const cancelled = await api('GET', '/api/campaigns?status=cancelled');
    expect(cancelled.json().data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
  });

  it('H10 a cursor of another list or edited: 400', async () => {
    const w = await workspace(app);
    const res = await call(app, w.key)('GET', '/api/campaigns?cursor=bm90LWEtY3Vyc29y.abc');
    expect(res.statusCode).toBe(400);
  });

  it('get answers the campaign with progress', async () => {
    const w = await workspace(app);
    const created = (await call(app, w.key)('POST', '/api/campaigns', base(w, { draft: true }))).json();
    const res = await call(app, w.key)('GET', `/api/campaigns/${created.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(created);
  });
});
