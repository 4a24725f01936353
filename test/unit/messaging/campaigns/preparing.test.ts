// Campaigns whose audience is larger than a request holds (docs/scale.md): the create answers
// 202 with the campaign `preparing`, the worker inserts the recipients in chunks (each contact
// once, opted-out ones left out, never past the cap) and moves it on to `sending`; a cancel is
// answered at once whatever the size, and the worker skips what the cancel left queued.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareChunk, type CampaignRow } from '#server/apis/messaging/campaigns/lifecycle.js';
import type { Store } from '#server/store/db.js';
import { buildShared } from '#test/helper.js';
import { openTestStore } from '#test/support/store.js';
import { addContacts, call, until, workspace, type Workspace } from './support.js';

describe('prepareChunk', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore();
  });
  afterAll(async () => store.close());

  /** A workspace with `contacts` contacts (the first `optedOut` opted out) and a campaign `preparing` for all of them. */
  async function preparing(contacts: number, optedOut: number): Promise<{ id: string; contactIds: string[] }> {
    const db = store.db;
    const ws = `ws_${Math.random().toString(36).slice(2, 12)}AB`;
    await db
      .insertInto('workspaces')
      .values({ id: ws, name: 'W', slug: ws.toLowerCase().replace('_', '-') })
      .execute();
    await db
      .insertInto('business_accounts')
      .values({ id: `${ws}_waba`, workspace_id: ws, kind: 'sandbox', provider_waba_id: ws, name: 'A' })
      .execute();
    await db
      .insertInto('phone_numbers')
      .values({
        id: `${ws}_pn`,
        workspace_id: ws,
        business_account_id: `${ws}_waba`,
        provider_phone_number_id: ws,
        display_phone_number: '+15550100100',
        verified_name: 'A',
      })
      .execute();
    const contactIds = await addContacts(db, ws, contacts);
    if (optedOut) await db.updateTable('contacts').set({ opted_out_at: new Date() }).where('id', 'in', contactIds.slice(0, optedOut)).execute();
    const id = `cmp_${ws.slice(3)}`;
    const now = new Date();
    await db
      .insertInto('campaigns')
      .values({
        id,
        workspace_id: ws,
        name: 'C',
        status: 'preparing',
        phone_number_id: `${ws}_pn`,
        chatapp_phone_number: '+15550100100',
        waba_id: `${ws}_waba`,
        audience: JSON.stringify({ type: 'all_contacts' }),
        template: JSON.stringify({ name: 't', language: 'en_US' }),
        rate_per_second: 80,
        audience_count: contacts,
        created_at: now,
        updated_at: now,
      })
      .execute();
    return { id, contactIds };
  }

  const chunk = (id: string, cap: number, size: number) =>
    store.db.transaction().execute((trx) => prepareChunk(trx, id, new Date(), cap, size)) as Promise<CampaignRow | null>;

  it('inserts chunk after chunk in contact order, then sends: each contact once, opted-out ones counted and left out', async () => {
    const { id, contactIds } = await preparing(10, 1);
    const first = await chunk(id, 100, 4);
    expect(first).toMatchObject({ status: 'preparing', total: 4 });
    expect(first!.prepared_through).not.toBeNull();
    expect((await chunk(id, 100, 4))?.total).toBe(8);
    const last = await chunk(id, 100, 4);
    expect(last).toMatchObject({ status: 'sending', total: 9, opted_out_skipped: 1, audience_count: 10, prepared_through: null });
    expect(last!.started_at).not.toBeNull();
    const rows = await store.db.selectFrom('campaign_recipients').select(['contact_id', 'state']).where('campaign_id', '=', id).execute();
    expect(new Set(rows.map((r) => r.contact_id))).toEqual(new Set(contactIds.slice(1)));
    expect(rows.every((r) => r.state === 'queued')).toBe(true);
    // No longer preparing: nothing more to do.
    expect(await chunk(id, 100, 4)).toBeNull();
  });

  it('stops at the cap when the audience grew past it while preparing', async () => {
    const { id } = await preparing(7, 0);
    expect((await chunk(id, 5, 4))?.status).toBe('preparing');
    expect(await chunk(id, 5, 4)).toMatchObject({ status: 'sending', total: 5 });
  });

  it('a cancelled campaign is not prepared further', async () => {
    const { id } = await preparing(6, 0);
    await chunk(id, 100, 2);
    await sql`update campaigns set status = 'cancelled' where id = ${id}`.execute(store.db);
    expect(await chunk(id, 100, 2)).toBeNull();
    const n = await store.db
      .selectFrom('campaign_recipients')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('campaign_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(2);
  });
});

describe('createCampaign with a large audience', () => {
  let app: FastifyInstance;
  let w: Workspace;
  beforeAll(async () => {
    app = await buildShared({ env: { CAMPAIGN_PREPARE_IN_REQUEST: '3', RATE_LIMIT_IP_PER_MINUTE: '1000' } });
    w = await workspace(app);
    await addContacts(app.platform.store.db, w.workspaceId, 8);
  });
  const body = () => ({
    name: 'Big',
    chatapp_phone_number: w.phone,
    audience: { type: 'all_contacts' },
    template: { name: 'welcome_offer', language: 'en_US' },
  });
  const get = async (id: string) => (await call(app, w.key)('GET', `/api/campaigns/${id}`)).json();

  it('202 preparing at once; the worker fixes the recipients and it sends to each contact once', async () => {
    const res = await call(app, w.key)('POST', '/api/campaigns', body());
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ status: 'preparing', audience_count: 8, started_at: null });
    const done = await until(
      async () => {
        const c = await get(res.json().id);
        return c.status === 'completed' && c;
      },
      15_000,
      'completion',
    );
    expect(done.progress.total).toBe(8);
    const sent = await app.platform.store.db.selectFrom('messages').select('contact_id').where('campaign_id', '=', res.json().id).execute();
    expect(new Set(sent.map((m) => m.contact_id)).size).toBe(8);
    expect(sent).toHaveLength(8);
  });

  it('an audience within the limit is still fixed in the request: 201 sending', async () => {
    const small = await call(app, w.key)('POST', '/api/campaigns', {
      ...body(),
      audience: { type: 'contacts', contact_ids: await addContacts(app.platform.store.db, w.workspaceId, 2, '+44790') },
    });
    expect(small.statusCode, small.body).toBe(201);
    expect(small.json()).toMatchObject({ status: 'sending', audience_count: 2, progress: { total: 2 } });
  });

  it('cancel answers at once in any state of a large campaign; nothing stays queued', async () => {
    const res = await call(app, w.key)('POST', '/api/campaigns', body());
    expect(res.statusCode).toBe(202);
    const cancelled = await call(app, w.key)('POST', `/api/campaigns/${res.json().id}/cancel`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json().status).toBe('cancelled');
    const settled = await until(
      async () => {
        const c = await get(res.json().id);
        return c.progress.queued === 0 && c;
      },
      15_000,
      'no recipient queued',
    );
    expect(settled.status).toBe('cancelled');
  });
});
