// Connections, numbers, provider webhooks and workspace sync, against the sandbox and the fake
// Cloud API on 127.0.0.1 (its failures included), plus tenant isolation (bad-inputs B1, B6) and paging (bad-inputs H9).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { bearer } from '#test/unit/account/support.js';
import { PROBLEM, tenant, type Tenant } from '../contacts/support.js';

const fake = new FakeProvider();
let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
const ORIGINAL_NUMBERS = fake.phoneNumbers.map((n) => ({ ...n }));

beforeAll(async () => {
  await fake.start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
  [a, b] = [await tenant(app), await tenant(app)];
});
afterAll(async () => fake.stop());
beforeEach(() => {
  fake.reset();
  fake.phoneNumbers.splice(0, fake.phoneNumbers.length, ...ORIGINAL_NUMBERS.map((n) => ({ ...n })));
  fake.marketingStatus = 'ONBOARDED';
});

async function connect(t: Tenant, body: object) {
  const res = await app.inject({ method: 'POST', url: '/api/chatapp/connections', headers: bearer(t.owner), payload: body });
  return { status: res.statusCode, body: res.json() };
}
const cloud = (extra: object = {}) => ({ kind: 'cloud_api', provider_waba_id: FAKE_WABA_ID, access_token: FAKE_TOKEN, ...extra });
async function disconnect(t: Tenant, ref: string) {
  return (await app.inject({ method: 'DELETE', url: `/api/chatapp/connections/${ref}`, headers: bearer(t.owner) })).statusCode;
}
async function accountsOf(t: Tenant) {
  return app.platform.store.db.selectFrom('business_accounts').selectAll().where('workspace_id', '=', t.workspaceId).execute();
}

describe('sandbox connections', () => {
  it('connects a sandbox account with a number; listed with its numbers by either id', async () => {
    const created = await connect(a, { kind: 'sandbox', name: 'Test sandbox' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'sandbox', name: 'Test sandbox', status: 'active', webhooks_subscribed: true, phone_numbers_count: 1 });
    const list = await a.call('GET', '/api/chatapp/connections');
    expect(list.body.data.map((c: { id: string }) => c.id)).toContain(created.body.id);
    for (const ref of [created.body.id, created.body.provider_waba_id]) {
      const numbers = await a.call('GET', `/api/chatapp/${ref}/phone-numbers`);
      expect(numbers.status).toBe(200);
      expect(numbers.body.data).toHaveLength(1);
      expect(numbers.body.data[0]).toMatchObject({ waba_id: created.body.id, is_sandbox: true, status: 'CONNECTED' });
      expect(numbers.body.data[0].display_phone_number).toMatch(/^\+1555\d{7}$/);
    }
    const all = await a.call('GET', '/api/chatapp/phone-numbers');
    expect(all.body.data.some((n: { waba_id: string }) => n.waba_id === created.body.id)).toBe(true);
  });

  it('setupProviderWebhooks on a sandbox account: 422 naming the path parameter', async () => {
    const created = await connect(a, { kind: 'sandbox' });
    const res = await a.call('POST', `/api/chatapp/${created.body.id}/webhooks/setup`);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ type: `${PROBLEM}unprocessable`, errors: [{ pointer: '/path/wabaId' }] });
  });

  it('createConnection with a Messaging key (owner only): 401, nothing created', async () => {
    const before = (await accountsOf(a)).length;
    const res = await a.call('POST', '/api/chatapp/connections', { kind: 'sandbox' });
    expect(res.status).toBe(401);
    expect((await accountsOf(a)).length).toBe(before);
  });

  it('H2/H3/H4 bodies: kind missing, unknown property, kind off the list: 400, nothing created', async () => {
    const before = (await accountsOf(a)).length;
    for (const body of [{}, { kind: 'sandbox', isAdmin: true }, { kind: 'telegram' }, { kind: 'cloud_api', provider_waba_id: FAKE_WABA_ID }]) {
      const res = await connect(a, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe(`${PROBLEM}validation`);
    }
    expect((await accountsOf(a)).length).toBe(before);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('cloud API connections', () => {
  it('connects with a token the provider accepts: numbers in E.164, onboarding fetched, token encrypted and never echoed; disconnect and reconnect', async () => {
    const created = await connect(a, cloud({ name: 'Acme' }));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      kind: 'cloud_api',
      name: 'Acme',
      provider_waba_id: FAKE_WABA_ID,
      status: 'active',
      webhooks_subscribed: false,
      phone_numbers_count: 2,
    });
    expect(JSON.stringify(created.body)).not.toContain(FAKE_TOKEN);
    expect(fake.requests.every((r) => r.headers.authorization === `Bearer ${FAKE_TOKEN}`)).toBe(true);
    const row = (await accountsOf(a)).find((r) => r.id === created.body.id)!;
    expect(row.access_token_enc).not.toContain(FAKE_TOKEN);
    expect(app.platform.secrets.decrypt(row.access_token_enc!)).toBe(FAKE_TOKEN);

    const numbers = await a.call('GET', `/api/chatapp/${FAKE_WABA_ID}/phone-numbers`);
    expect(numbers.body.data.map((n: { display_phone_number: string }) => n.display_phone_number).sort()).toEqual(['+15550100100', '+447700900123']);
    expect(numbers.body.data.find((n: { display_phone_number: string }) => n.display_phone_number === '+447700900123')).toMatchObject({
      quality_rating: 'YELLOW',
      messaging_limit_tier: 'TIER_250',
      is_sandbox: false,
    });
    const settings = await a.call('GET', `/api/chatapp/${created.body.id}/marketing-messages`);
    expect(settings.body).toMatchObject({ enabled: true, product_policy: 'CLOUD_API_FALLBACK', activity_sharing: null, onboarding_status: 'ONBOARDED' });

    // already connected, here or in another workspace: 409
    expect((await connect(a, cloud())).status).toBe(409);
    const elsewhere = await connect(b, cloud());
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.detail).not.toContain(a.workspaceId);

    expect(await disconnect(a, FAKE_WABA_ID)).toBe(204);
    expect((await a.call('GET', '/api/chatapp/connections')).body.data.map((c: { id: string }) => c.id)).not.toContain(created.body.id);
    expect((await a.call('GET', `/api/chatapp/${created.body.id}/phone-numbers`)).status).toBe(404);
    expect((await a.call('GET', `/api/chatapp/${created.body.id}/marketing-messages`)).status).toBe(404);
    const after = (await accountsOf(a)).find((r) => r.id === created.body.id)!;
    expect(after.access_token_enc).toBeNull();
    // Its numbers send nothing any more: 404 like an unknown sender, before any provider call.
    const sent = fake.requests.length;
    const send = await a.call('POST', '/api/chatapp/send', {
      chatapp_phone_number: '+15550100100',
      contact_no: '+4915112345678',
      messageType: 'template',
      template: { name: 'any', language: 'en_US' },
    });
    expect(send.status).toBe(404);
    expect(send.body.errors).toEqual([{ pointer: '/body/chatapp_phone_number', detail: 'unknown sender number' }]);
    expect(fake.requests.length).toBe(sent);
    expect(await disconnect(a, created.body.id)).toBe(404);

    const again = await connect(a, cloud());
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(created.body.id); // the same account, its numbers and messages revived
    expect(again.body.phone_numbers_count).toBe(2);
    expect(await disconnect(a, created.body.id)).toBe(204);
  });

  it('a token the provider refuses (190): 422 naming access_token with the provider code; nothing stored', async () => {
    const before = (await accountsOf(a)).length;
    const res = await connect(a, cloud({ access_token: 'EAAG-not-a-valid-token-at-all-0000' }));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ type: `${PROBLEM}unprocessable`, provider_code: 190, errors: [{ pointer: '/body/access_token' }] });
    expect(JSON.stringify(res.body)).not.toContain('EAAG-not-a-valid');
    expect((await accountsOf(a)).length).toBe(before);
  });

  it('H1 a token no Authorization header can carry (space, control, non-ASCII): 400 naming access_token, the provider never called (schemathesis found 502)', async () => {
    const before = (await accountsOf(a)).length;
    fake.requests.length = 0;
    for (const token of ['EAAG with spaces in it 0000', 'EAAG\u0007control-character-0000', 'EAAGnon-ascii-é-character-000']) {
      const res = await connect(a, cloud({ access_token: token }));
      expect(res.status, token).toBe(400);
      expect(res.body).toMatchObject({ type: `${PROBLEM}validation`, errors: [{ pointer: '/body/access_token' }] });
      expect(JSON.stringify(res.body)).not.toContain('EAAG');
    }
    expect(fake.requests).toEqual([]);
    expect((await accountsOf(a)).length).toBe(before);
  });

  it('a business account the token cannot read (100): 422 naming provider_waba_id', async () => {
    const res = await connect(a, cloud({ provider_waba_id: '123456789012345' }));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ provider_code: 100, errors: [{ pointer: '/body/provider_waba_id' }] });
  });

  it('the provider failing (5xx after retries): 502 provider-error; nothing stored', async () => {
    const before = (await accountsOf(a)).length;
    fake.fail('server-error', { times: 5 });
    const res = await connect(a, cloud());
    expect(res.status).toBe(502);
    expect(res.body.type).toBe(`${PROBLEM}provider-error`);
    expect((await accountsOf(a)).length).toBe(before);
  });

  it('setupProviderWebhooks subscribes the app; its failure is a 502', async () => {
    const created = await connect(a, cloud());
    const res = await a.call('POST', `/api/chatapp/${created.body.id}/webhooks/setup`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ waba_id: created.body.id, subscribed: true, fields: ['messages'] });
    expect(res.body.callback_url).toMatch(/\/api\/webhook\/chatapp$/);
    expect(fake.requests.some((r) => r.method === 'POST' && r.path === `/${FAKE_WABA_ID}/subscribed_apps`)).toBe(true);
    expect((await a.call('GET', '/api/chatapp/connections')).body.data.find((c: { id: string }) => c.id === created.body.id).webhooks_subscribed).toBe(true);
    fake.fail('server-error', { times: 5 });
    const failed = await a.call('POST', `/api/chatapp/${FAKE_WABA_ID}/webhooks/setup`);
    expect(failed.status).toBe(502);
    expect(failed.body.type).toBe(`${PROBLEM}provider-error`);
    expect(await disconnect(a, created.body.id)).toBe(204);
  });

  it('syncWorkspace adds, updates and disconnects numbers and refreshes onboarding; a refused token is reported per account and marks it token_invalid', async () => {
    const created = await connect(a, cloud());
    fake.phoneNumbers[0]!.quality_rating = 'RED';
    fake.phoneNumbers.splice(1, 1);
    fake.phoneNumbers.push({
      id: '106540352242999',
      display_phone_number: '+49 151 2345 6789',
      verified_name: 'Acme DE',
      status: 'PENDING',
      quality_rating: 'UNKNOWN',
      messaging_limit_tier: 'TIER_UNKNOWN_NEW',
    });
    fake.marketingStatus = 'PENDING_REVIEW';
    const res = await a.call('POST', '/api/chatapp/workspace/sync');
    expect(res.status).toBe(200);
    const mine = res.body.accounts.find((r: { waba_id: string }) => r.waba_id === created.body.id);
    expect(mine).toEqual({
      waba_id: created.body.id,
      phone_numbers_added: 1,
      phone_numbers_updated: 1,
      phone_numbers_removed: 1,
      marketing_messages_onboarding: 'PENDING',
      error: null,
    });
    const numbers = (await a.call('GET', `/api/chatapp/${created.body.id}/phone-numbers`)).body.data;
    expect(numbers.find((n: { display_phone_number: string }) => n.display_phone_number === '+4915123456789')).toMatchObject({
      status: 'PENDING',
      messaging_limit_tier: null,
    });
    expect(numbers.find((n: { display_phone_number: string }) => n.display_phone_number === '+447700900123').status).toBe('DISCONNECTED');

    fake.fail('auth', { times: 10 });
    const refused = await a.call('POST', '/api/chatapp/workspace/sync');
    expect(refused.status).toBe(200);
    const failed = refused.body.accounts.find((r: { waba_id: string }) => r.waba_id === created.body.id);
    expect(failed).toMatchObject({ phone_numbers_added: 0, marketing_messages_onboarding: 'PENDING', error: { provider_code: 190 } });
    expect((await a.call('GET', '/api/chatapp/connections')).body.data.find((c: { id: string }) => c.id === created.body.id).status).toBe('token_invalid');
    fake.reset();
    await a.call('POST', `/api/chatapp/${created.body.id}/marketing-messages/sync-status`);
    expect((await a.call('GET', '/api/chatapp/connections')).body.data.find((c: { id: string }) => c.id === created.body.id).status).toBe('active');
    expect(await disconnect(a, created.body.id)).toBe(204);

    // every account failing is the provider failing: 502 with its code. A disconnected account
    // may be connected by another workspace: its numbers (and their inbound messages) move there.
    const onlyB = await connect(b, cloud());
    expect(onlyB.status).toBe(201);
    expect(onlyB.body.id).not.toBe(created.body.id);
    expect(onlyB.body.phone_numbers_count).toBe(2);
    const owners = await app.platform.store.db
      .selectFrom('phone_numbers')
      .select('workspace_id')
      .where('provider_phone_number_id', '=', fake.phoneNumbers[0]!.id)
      .execute();
    expect(owners).toEqual([{ workspace_id: b.workspaceId }]);
    fake.fail('auth', { times: 10 });
    const all = await b.call('POST', '/api/chatapp/workspace/sync');
    expect(all.status).toBe(502);
    expect(all.body).toMatchObject({ type: `${PROBLEM}provider-error`, provider_code: 190 });
    fake.reset();
    expect(await disconnect(b, onlyB.body.id)).toBe(204);
  });
});

describe('isolation and paging', () => {
  it("B1 every wabaId operation with B's credential on A's account: 404 with the same body as an unknown id", async () => {
    const created = await connect(a, { kind: 'sandbox' });
    const ops: [string, string, object?][] = [
      ['GET', '/api/chatapp/{id}/phone-numbers'],
      ['POST', '/api/chatapp/{id}/webhooks/setup'],
      ['GET', '/api/chatapp/{id}/marketing-messages'],
      ['PUT', '/api/chatapp/{id}/marketing-messages', { enabled: false }],
      ['POST', '/api/chatapp/{id}/marketing-messages/sync-status'],
    ];
    for (const [method, path, body] of ops) {
      for (const ref of [created.body.id, created.body.provider_waba_id]) {
        const theirs = await b.call(method, path.replace('{id}', ref), body);
        const unknown = await b.call(method, path.replace('{id}', ref.startsWith('waba_') ? 'waba_00000000000000000000' : '900000000000000'), body);
        expect(theirs.status, `${method} ${path}`).toBe(404);
        expect(unknown.status).toBe(404);
        expect(theirs.body.type).toBe(unknown.body.type);
        expect(theirs.body.detail.replace(ref, 'X')).toBe(unknown.body.detail.replace(/waba_0+|900000000000000/, 'X'));
      }
    }
    const del = await app.inject({ method: 'DELETE', url: `/api/chatapp/connections/${created.body.id}`, headers: bearer(b.owner) });
    expect(del.statusCode).toBe(404);
    const settings = await a.call('GET', `/api/chatapp/${created.body.id}/marketing-messages`);
    expect(settings.body.enabled).toBe(true); // B's PUT changed nothing
    expect((await b.call('GET', '/api/chatapp/connections')).body.data.map((c: { id: string }) => c.id)).not.toContain(created.body.id);
    expect((await b.call('GET', '/api/chatapp/phone-numbers')).body.data.some((n: { waba_id: string }) => n.waba_id === created.body.id)).toBe(false);
  });

  it('B6/H9/H10 pages: limit bounds, cursors only continue their own listing', async () => {
    await connect(a, { kind: 'sandbox', name: 'page 1' });
    await connect(a, { kind: 'sandbox', name: 'page 2' });
    const first = await a.call('GET', '/api/chatapp/connections?limit=1');
    expect(first.body).toMatchObject({ has_more: true });
    const second = await a.call('GET', `/api/chatapp/connections?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.status).toBe(200);
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    for (const limit of ['-1', '0', '1.5', 'abc', '1000000000']) {
      const res = await a.call('GET', `/api/chatapp/connections?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body.errors[0].pointer).toBe('/query/limit');
    }
    for (const cursor of [first.body.next_cursor.slice(0, -2), 'bm90LWEtY3Vyc29y', `${first.body.next_cursor}x`]) {
      expect((await a.call('GET', `/api/chatapp/connections?cursor=${encodeURIComponent(cursor)}`)).status).toBe(400);
    }
    const foreign = await b.call('GET', `/api/chatapp/connections?cursor=${first.body.next_cursor}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors[0].pointer).toBe('/query/cursor');
    expect((await a.call('GET', `/api/chatapp/phone-numbers?cursor=${first.body.next_cursor}`)).status).toBe(400);
  });
});
