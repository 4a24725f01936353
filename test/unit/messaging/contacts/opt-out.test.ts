// Opt-out honoured: keywords per workspace (defaults, replaced, refused when in both lists), an
// inbound keyword opting the contact out and back in, the API setting the state, sends to an
// opted-out contact refused with 422 opted-out (authentication templates and replies after the
// customer wrote again after the opt-out allowed; a free-form text right after STOP refused),
// campaigns leaving opted-out contacts out and counting them.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { startSending } from '#server/apis/messaging/campaigns/lifecycle.js';
import { normalizeKeyword } from '#server/apis/messaging/contacts/opt-out.js';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { addContacts, addTemplates, call, until, workspace, type Workspace } from '../campaigns/support.js';

let app: FastifyInstance;
let w: Workspace;
let other: Workspace;
const PROBLEM = 'https://chatapp.example/problems/';

beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  [w, other] = [await workspace(app), await workspace(app)];
  await addTemplates(app.platform.store.db, w, [
    { name: 'login_code', category: 'AUTHENTICATION', components: [{ type: 'BODY', text: '{{1}} is your code.' }] },
  ]);
}, 120_000);

const api = (as: Workspace = w) => {
  const c = call(app, as.key);
  return async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => {
    const res = await (c as (m: string, u: string, p?: unknown) => ReturnType<typeof c>)(method, url, payload);
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
};

async function writes(as: Workspace, from: string, text: string) {
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  const pn = await app.platform.store.db.selectFrom('phone_numbers').select('provider_phone_number_id').where('id', '=', as.numberId).executeTakeFirstOrThrow();
  await sandbox.simulateInbound({ phoneNumberId: pn.provider_phone_number_id, from, name: 'Lena', message: { type: 'text', text: { body: text } } });
}

const contactOf = async (as: Workspace, phone: string) => {
  const list = await api(as)('GET', `/api/contacts?q=${encodeURIComponent(phone)}`);
  return list.body.data[0];
};

const text = (to: string, message = 'Hello') =>
  api()('POST', '/api/chatapp/send', { contact_no: to, chatapp_phone_number: w.phone, messageType: 'text', message });
const template = (to: string, name: string, body: string[] = []) =>
  api()('POST', '/api/chatapp/send', { contact_no: to, chatapp_phone_number: w.phone, messageType: 'template', template: { name, language: 'en_US', body } });

describe('opt-out keywords', () => {
  it('defaults to STOP/START and translations; replaced per workspace; a keyword in both lists is 422', async () => {
    const defaults = await api()('GET', '/api/opt-out-settings');
    expect(defaults.status).toBe(200);
    expect(defaults.body.opt_out_keywords).toEqual(expect.arrayContaining(['STOP', 'UNSUBSCRIBE', 'PARAR', 'BAJA', 'ARRET', 'STOPP']));
    expect(defaults.body.opt_in_keywords).toEqual(expect.arrayContaining(['START', 'SUBSCRIBE']));
    expect(defaults.body.updated_at).toBeNull();

    const both = await api(other)('PUT', '/api/opt-out-settings', { opt_out_keywords: ['STOP'], opt_in_keywords: ['Stop!'] });
    expect(both.status).toBe(422);
    expect(both.body.errors[0].pointer).toBe('/body/opt_in_keywords/0');
    const blank = await api(other)('PUT', '/api/opt-out-settings', { opt_out_keywords: ['!!!'] });
    expect(blank.status).toBe(422);
    for (const bad of [{ opt_out_keywords: [] }, { opt_out_keywords: ['a\u0000b'] }, { opt_out_keywords: ['x'.repeat(41)] }, { keywords: ['STOP'] }]) {
      expect((await api(other)('PUT', '/api/opt-out-settings', bad)).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await api(other)('GET', '/api/opt-out-settings')).body.updated_at).toBeNull(); // nothing stored

    const set = await api(other)('PUT', '/api/opt-out-settings', { opt_out_keywords: ['SAIR', 'sair', 'Cancelar'] });
    expect(set.status).toBe(200);
    expect(set.body.opt_out_keywords).toEqual(['SAIR', 'Cancelar']);
    expect(set.body.opt_in_keywords).toEqual(defaults.body.opt_in_keywords);
    // Only that workspace's keywords changed.
    expect((await api()('GET', '/api/opt-out-settings')).body.opt_out_keywords).toEqual(defaults.body.opt_out_keywords);
  });

  it('matching ignores case, accents, spaces and surrounding punctuation, and only whole messages', () => {
    expect(normalizeKeyword('  Arrêt !')).toBe('ARRET');
    expect(normalizeKeyword('stop.')).toBe('STOP');
    expect(normalizeKeyword('please stop')).toBe('PLEASE STOP');
  });

  it('an inbound keyword opts the contact out and back in; other text changes nothing', async () => {
    const phone = '+4915170000001';
    await writes(w, phone, 'Hello there');
    expect(await contactOf(w, phone)).toMatchObject({ opted_out: false, opted_out_at: null, opt_out_source: null });
    await writes(w, phone, 'please stop sending me things'); // not a whole-message keyword
    expect((await contactOf(w, phone)).opted_out).toBe(false);
    await writes(w, phone, 'Stop!');
    const out = await contactOf(w, phone);
    expect(out).toMatchObject({ opted_out: true, opt_out_source: 'keyword' });
    expect(out.opted_out_at).not.toBeNull();
    await writes(w, phone, 'start');
    expect(await contactOf(w, phone)).toMatchObject({ opted_out: false, opted_out_at: null, opt_out_source: null });
    // Another workspace's keywords: SAIR opts out there, STOP no longer does.
    await writes(other, phone, 'STOP');
    expect((await contactOf(other, phone)).opted_out).toBe(false);
    await writes(other, phone, 'sair');
    expect((await contactOf(other, phone)).opted_out).toBe(true);
    expect((await contactOf(w, phone)).opted_out).toBe(false);
  });

  it('set by the API: opted_out true (source api) and false', async () => {
    const created = await api()('POST', '/api/contacts', { contact_no: '+4915170000002' });
    const id = created.body.id;
    const out = await api()('PUT', `/api/contacts/${id}`, { opted_out: true });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ opted_out: true, opt_out_source: 'api' });
    const again = await api()('PUT', `/api/contacts/${id}`, { opted_out: true });
    expect(again.body.opted_out_at).toBe(out.body.opted_out_at); // the first time is kept
    expect((await api()('PUT', `/api/contacts/${id}`, { opted_out: 'yes' })).status).toBe(400);
    const back = await api()('PUT', `/api/contacts/${id}`, { opted_out: false });
    expect(back.body).toMatchObject({ opted_out: false, opted_out_at: null, opt_out_source: null });
  });
});

describe('sending to an opted-out contact', () => {
  it('422 opted-out for templates and free-form; authentication templates and replies after the customer wrote again pass', async () => {
    const phone = '+4915170000003';
    await writes(w, phone, 'Hi');
    const id = (await contactOf(w, phone)).id;
    expect((await text(phone)).status).toBe(201);
    // Opted out (by the API) after the customer's last message; provider times are whole seconds,
    // so the times are set apart explicitly rather than left to the clock.
    const now = Date.now();
    await app.platform.store.db
      .updateTable('contacts')
      .set({ last_inbound_at: new Date(now - 60_000), opted_out_at: new Date(now - 30_000), opt_out_source: 'api' })
      .where('id', '=', id)
      .execute();
    const before = await app.platform.store.db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();

    const refused = await text(phone);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ type: `${PROBLEM}opted-out`, status: 422, errors: [{ pointer: '/body/contact_no' }] });
    expect((await template(phone, 'welcome_offer')).body.type).toBe(`${PROBLEM}opted-out`);
    expect(
      (
        await app.platform.store.db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ).toEqual(before.n);

    const otp = await template(phone, 'login_code', ['123456']);
    expect(otp.status, JSON.stringify(otp.body)).toBe(201);
    // The customer writes again: replying is a service reply, allowed.
    await writes(w, phone, 'Where is my order?');
    expect((await text(phone, 'On its way')).status).toBe(201);
  });

  it('after STOP nothing free-form goes out (only the automatic confirmation, opt-out-order.test.ts); templates neither', async () => {
    const phone = '+4915170000004';
    await writes(w, phone, 'STOP');
    const promo = await text(phone, 'PS: 20% off this weekend!');
    expect(promo.status).toBe(422);
    expect(promo.body.type).toBe(`${PROBLEM}opted-out`);
    expect((await template(phone, 'welcome_offer')).status).toBe(422);
  });
});

describe('campaigns', () => {
  it('leave opted-out contacts out and count them on the campaign', async () => {
    const c = await workspace(app);
    const db = app.platform.store.db;
    const ids = await addContacts(db, c.workspaceId, 5, '+49152');
    await db.updateTable('contacts').set({ opted_out_at: new Date(), opt_out_source: 'api' }).where('id', 'in', ids.slice(0, 2)).execute();
    const res = await call(app, c.key)('POST', '/api/campaigns', {
      name: 'Sale',
      chatapp_phone_number: c.phone,
      audience: { type: 'all_contacts' },
      template: { name: 'welcome_offer', language: 'en_US' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ opted_out_skipped: 2, progress: { total: 3 } });
    await until(async () => (await call(app, c.key)('GET', `/api/campaigns/${res.json().id}`)).json().status === 'completed', 15_000, 'completion');
    const sentTo = await db.selectFrom('messages').select('contact_id').where('workspace_id', '=', c.workspaceId).execute();
    expect(sentTo.map((m) => m.contact_id).sort()).toEqual(ids.slice(2).sort());
  });

  it('a recipient who opts out after sending started is skipped before its turn, and counted', async () => {
    const c = await workspace(app);
    const db = app.platform.store.db;
    const ids = await addContacts(db, c.workspaceId, 3, '+49153');
    const res = await call(app, c.key)('POST', '/api/campaigns', {
      name: 'Later',
      chatapp_phone_number: c.phone,
      audience: { type: 'all_contacts' },
      template: { name: 'welcome_offer', language: 'en_US' },
      scheduled_at: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().id;
    // Start it by hand with its recipients fixed, then opt one out before the worker claims it.
    await db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('campaigns').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
      await startSending(trx, row, new Date(), 1000);
      await trx.updateTable('contacts').set({ opted_out_at: new Date(), opt_out_source: 'keyword' }).where('id', '=', ids[0]!).execute();
    });
    const done = await until(
      async () => {
        const v = (await call(app, c.key)('GET', `/api/campaigns/${id}`)).json();
        return v.status === 'completed' && v;
      },
      15_000,
      'completion',
    );
    expect(done.opted_out_skipped).toBe(1);
    const states = await db.selectFrom('campaign_recipients').select(['contact_id', 'state', 'error']).where('campaign_id', '=', id).execute();
    expect(states.find((s) => s.contact_id === ids[0])).toMatchObject({ state: 'skipped', error: { code: 'opted-out' } });
    const sentTo = await db.selectFrom('messages').select('contact_id').where('workspace_id', '=', c.workspaceId).execute();
    expect(sentTo.map((m) => m.contact_id).sort()).toEqual(ids.slice(1).sort());
  });
});
