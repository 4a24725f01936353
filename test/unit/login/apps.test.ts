// Login apps over the owner API: every operation's happy path and errors, secrets at rest, the
// Login-key schemes (bad-inputs A3, A8), tenant isolation (bad-inputs B1, B3, B6), the provider webhook set-up against
// the fake Cloud API, and webhook URLs checked when accepted (G, production mode).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { resolveLoginNumber, SERVICE_WORKSPACE_ID } from '#server/apis/login/service-phone.js';
import { FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { build, buildShared } from '#test/helper.js';
import { authHarness } from '../account/harness.js';
import { bearer, createKey, signUp, type SignedUp } from '../account/support.js';

const PROBLEM = 'https://chatapp.example/problems/';
const APPS = '/api/login/apps';

async function newApp(app: FastifyInstance, owner: SignedUp, body: Record<string, unknown> = { name: 'Shop' }) {
  const res = await app.inject({ method: 'POST', url: APPS, headers: bearer(owner.token), payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

describe('Login apps', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  let b: SignedUp;
  beforeAll(async () => {
    app = await buildShared();
    a = await signUp(app, 'login-a');
    b = await signUp(app, 'login-b');
  });

  it('create: 201 with Location, no-store, the key and secret once; the service number by default', async () => {
    const res = await app.inject({ method: 'POST', url: APPS, headers: bearer(a.token), payload: { name: 'Acme Shop', webhook_destination: 'hosted' } });
    expect(res.statusCode).toBe(201);
    const created = res.json();
    expect(res.headers.location).toBe(`${APPS}/${created.id}`);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(created).toMatchObject({
      name: 'Acme Shop',
      use_service_phone: true,
      phone_number_id: null,
      webhook_destination: 'hosted',
      production_webhook_url: null,
      staging_webhook_url: null,
    });
    expect(created.id).toMatch(/^app_[0-9A-Za-z]{20}$/);
    expect(created.api_key).toMatch(/^lk_live_[0-9A-Za-z]{32}$/);
    expect(created.webhook_secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(created.api_key_prefix).toBe(created.api_key.slice(0, 12));
    expect(created.webhook_secret_prefix).toBe(created.webhook_secret.slice(0, 10));
    expect(created.provider_webhook).toEqual({ status: 'not_required', last_error: null, provider_code: null, updated_at: null });
    expect(created.hosted_webhook_url).toBe(`${app.config.publicUrl}/api/chatapp-auth/webhook/${created.id}`);
    const service = await app.loginServiceNumber.get();
    expect(created.display_phone_number).toBe(service.display_phone_number);
    // The service number's provider id, which a delivery signed by hand must name (metadata.phone_number_id).
    expect(created.provider_phone_number_id).toBe(service.provider_phone_number_id);
    expect(created.provider_phone_number_id).toMatch(/^[0-9]{5,20}$/);
    expect(service.workspace_id).toBe(SERVICE_WORKSPACE_ID);

    // bad-inputs L1: afterwards only prefixes
    const got = await app.inject({ url: `${APPS}/${created.id}`, headers: bearer(a.token) });
    expect(got.statusCode).toBe(200);
    const { api_key: _k, webhook_secret: _s, ...view } = created;
    expect(got.json()).toEqual(view);
    expect(got.body).not.toContain(created.api_key);
    expect(got.body).not.toContain(created.webhook_secret);
  });

  it('L2 at rest: the API key only as a digest, the webhook secret only as ciphertext', async () => {
    const created = await newApp(app, a);
    const row = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.api_key);
    expect(JSON.stringify(row)).not.toContain(created.webhook_secret);
    expect(row.api_key_digest).toBe(app.platform.secrets.digest(created.api_key));
    expect(row.webhook_secret_enc).toMatch(/^v1\./);
    expect(app.platform.secrets.decrypt(row.webhook_secret_enc)).toBe(created.webhook_secret);
  });

  it("list: newest first, cursor pagination; H10 a made-up cursor and B6 another workspace's cursor are 400", async () => {
    const owner = await signUp(app, 'login-list');
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) ids.push((await newApp(app, owner, { name })).id);
    const first = await app.inject({ url: `${APPS}?limit=2`, headers: bearer(owner.token) });
    expect(first.statusCode).toBe(200);
    const page1 = first.json();
    expect(page1.data.map((x: { id: string }) => x.id)).toEqual([ids[2], ids[1]]);
    expect(page1.has_more).toBe(true);
    expect(JSON.stringify(page1)).not.toMatch(/lk_live_[0-9A-Za-z]{32}|whsec_[0-9A-Za-z]{32}/);
    const page2 = (await app.inject({ url: `${APPS}?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, headers: bearer(owner.token) })).json();
    expect(page2).toMatchObject({ has_more: false, next_cursor: null });
    expect(page2.data.map((x: { id: string }) => x.id)).toEqual([ids[0]]);
    for (const [token, cursor] of [
      [owner.token, 'not-a-cursor'],
      [b.token, page1.next_cursor],
    ]) {
      const res = await app.inject({ url: `${APPS}?cursor=${encodeURIComponent(cursor)}`, headers: bearer(token) });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors).toEqual([{ pointer: '/query/cursor', detail: expect.any(String) }]);
    }
    // bad-inputs B5: B sees none of A's apps
    const bList = (await app.inject({ url: APPS, headers: bearer(b.token) })).json();
    expect(bList.data.every((x: { id: string }) => !ids.includes(x.id))).toBe(true);
  });

  it('destination rules: production or staging without its URL is 400 naming the field (create and update)', async () => {
    const res = await app.inject({ method: 'POST', url: APPS, headers: bearer(a.token), payload: { name: 'x', webhook_destination: 'staging' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: `${PROBLEM}validation`, errors: [{ pointer: '/body/staging_webhook_url' }] });
    const created = await newApp(app, a, { name: 'x', webhook_destination: 'production', production_webhook_url: 'https://127.0.0.1/hook' });
    const cleared = await app.inject({ method: 'PATCH', url: `${APPS}/${created.id}`, headers: bearer(a.token), payload: { production_webhook_url: null } });
    expect(cleared.statusCode).toBe(400);
    expect(cleared.json().errors).toEqual([{ pointer: '/body/production_webhook_url', detail: expect.any(String) }]);
  });

  it('update: only the fields sent change, null clears; unknown fields 400; H8 NUL in the name 400', async () => {
    const created = await newApp(app, a, {
      name: 'Before',
      webhook_destination: 'staging',
      staging_webhook_url: 'https://127.0.0.1/s',
      production_webhook_url: 'https://127.0.0.1/p',
    });
    const res = await app.inject({
      method: 'PATCH',
      url: `${APPS}/${created.id}`,
      headers: bearer(a.token),
      payload: { name: 'After', webhook_destination: 'none', staging_webhook_url: null },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      name: 'After',
      webhook_destination: 'none',
      staging_webhook_url: null,
      production_webhook_url: 'https://127.0.0.1/p',
      api_key_prefix: created.api_key_prefix,
    });
    expect(new Date(res.json().updated_at).getTime()).toBeGreaterThanOrEqual(new Date(created.updated_at).getTime());
    const unknown = await app.inject({ method: 'PATCH', url: `${APPS}/${created.id}`, headers: bearer(a.token), payload: { isAdmin: true } });
    expect(unknown.statusCode).toBe(400);
    const nul = await app.inject({ method: 'PATCH', url: `${APPS}/${created.id}`, headers: bearer(a.token), payload: { name: 'a\u0000b' } });
    expect(nul.statusCode).toBe(400);
    expect(nul.json().errors[0].pointer).toBe('/body/name');
  });

  it('delete: 204, then 404; its key stops working at once', async () => {
    const api = await authHarness(app);
    try {
      const created = await newApp(app, a);
      expect((await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': created.api_key } })).statusCode).toBe(200);
      const res = await app.inject({ method: 'DELETE', url: `${APPS}/${created.id}`, headers: bearer(a.token) });
      expect(res.statusCode).toBe(204);
      expect((await app.inject({ url: `${APPS}/${created.id}`, headers: bearer(a.token) })).statusCode).toBe(404);
      expect((await app.inject({ method: 'DELETE', url: `${APPS}/${created.id}`, headers: bearer(a.token) })).statusCode).toBe(404);
      expect((await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': created.api_key } })).statusCode).toBe(401);
    } finally {
      await api.close();
    }
  });

  it('A3 rotate the API key: the old one is 401 at once (even cached), the new one works, shown once with no-store', async () => {
    const api = await authHarness(app);
    try {
      const created = await newApp(app, a);
      const call = (key: string) => api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { authorization: `ApiKey ${key}` } });
      const before = await call(created.api_key); // now in the verifier's cache
      expect(before.statusCode).toBe(200);
      expect(before.json().auth).toEqual({ workspaceId: a.workspace.id, kind: 'login_app', appId: created.id, scopes: [] });
      const res = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/rotate-api-key`, headers: bearer(a.token) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const rotated = res.json();
      expect(rotated).toMatchObject({ app_id: created.id, api_key: expect.stringMatching(/^lk_live_/), api_key_prefix: rotated.api_key.slice(0, 12) });
      expect((await call(created.api_key)).statusCode).toBe(401);
      expect((await call(rotated.api_key)).statusCode).toBe(200);
      const got = (await app.inject({ url: `${APPS}/${created.id}`, headers: bearer(a.token) })).json();
      expect(got.api_key_prefix).toBe(rotated.api_key_prefix);
    } finally {
      await api.close();
    }
  });

  it('A8 keys on the wrong API: a Messaging key on Login, a Login key on Messaging, a Login key one character off: 401', async () => {
    const api = await authHarness(app);
    try {
      const login = await newApp(app, a);
      const messaging = await createKey(app, a.token);
      const verify = await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': messaging.secret } });
      expect(verify.statusCode).toBe(401);
      expect(verify.headers['www-authenticate']).toBe('ApiKey realm="login"');
      expect((await api.inject({ url: '/api/contacts', headers: { 'x-api-key': login.api_key } })).statusCode).toBe(401);
      expect((await api.inject({ url: '/api/contacts', headers: { authorization: `ApiKey ${login.api_key}` } })).statusCode).toBe(401);
      const offByOne = login.api_key.slice(0, -1) + (login.api_key.endsWith('A') ? 'B' : 'A'); // bad-inputs A11
      expect((await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { 'x-api-key': offByOne } })).statusCode).toBe(401);
      expect((await api.inject({ method: 'POST', url: '/v1/auth/verify-token', headers: { authorization: `Bearer ${login.api_key}` } })).statusCode).toBe(401);
      expect((await api.inject({ method: 'POST', url: `/v1/auth/verify-token?api_key=${login.api_key}` })).statusCode).toBe(401); // bad-inputs A4
    } finally {
      await api.close();
    }
  });

  it('rotate the webhook secret: at once (no overlap) or with previous_secret_valid_for', async () => {
    const created = await newApp(app, a);
    const atOnce = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/rotate-webhook-secret`, headers: bearer(a.token) });
    expect(atOnce.statusCode).toBe(200);
    expect(atOnce.headers['cache-control']).toBe('no-store');
    expect(atOnce.json()).toMatchObject({ app_id: created.id, webhook_secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: null });
    let row = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.previous_webhook_secret_enc).toBeNull();
    expect(app.platform.secrets.decrypt(row.webhook_secret_enc)).toBe(atOnce.json().webhook_secret);

    const overlap = await app.inject({
      method: 'POST',
      url: `${APPS}/${created.id}/rotate-webhook-secret`,
      headers: bearer(a.token),
      payload: { previous_secret_valid_for: 3600 },
    });
    expect(overlap.statusCode).toBe(200);
    const body = overlap.json();
    expect(new Date(body.previous_secret_expires_at).getTime() - new Date(body.rotated_at).getTime()).toBe(3600_000);
    row = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(app.platform.secrets.decrypt(row.previous_webhook_secret_enc!)).toBe(atOnce.json().webhook_secret);
    expect(row.webhook_secret_prefix).toBe(body.webhook_secret_prefix);

    const tooLong = await app.inject({
      method: 'POST',
      url: `${APPS}/${created.id}/rotate-webhook-secret`,
      headers: bearer(a.token),
      payload: { previous_secret_valid_for: 86_401 },
    });
    expect(tooLong.statusCode).toBe(400);
  });

  it("B1 workspace B gets 404 on A's app for every path operation, with the body of an unknown id; nothing changes", async () => {
    const created = await newApp(app, a);
    const before = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    const unknown = newId('app');
    const calls = (id: string) =>
      [
        { method: 'GET', url: `${APPS}/${id}` },
        { method: 'PATCH', url: `${APPS}/${id}`, payload: { name: 'stolen' } },
        { method: 'DELETE', url: `${APPS}/${id}` },
        { method: 'POST', url: `${APPS}/${id}/rotate-api-key` },
        { method: 'POST', url: `${APPS}/${id}/rotate-webhook-secret` },
        { method: 'POST', url: `${APPS}/${id}/provider-webhook/retry` },
        { method: 'GET', url: `${APPS}/${id}/webhook-receipts` },
      ] as const;
    const strip = (body: Record<string, unknown>, id: string) => JSON.stringify({ ...body, request_id: 0, instance: 0 }).replaceAll(id, 'ID');
    for (const [i, call] of calls(created.id).entries()) {
      const theirs = await app.inject({ ...call, headers: bearer(b.token) });
      const none = await app.inject({ ...calls(unknown)[i]!, headers: bearer(b.token) });
      expect(theirs.statusCode, call.url).toBe(404);
      expect(strip(theirs.json(), created.id)).toBe(strip(none.json(), unknown));
    }
    const after = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(after).toEqual(before);
    // bad-inputs B8: malformed ids are 400 from the contract's pattern, never 500
    expect((await app.inject({ url: `${APPS}/abc`, headers: bearer(a.token) })).statusCode).toBe(400);
    expect((await app.inject({ url: `${APPS}/app_${'a'.repeat(500)}`, headers: bearer(a.token) })).statusCode).toBe(400);
  });

  it('no owner bearer: 401; a Login key is no owner credential', async () => {
    const created = await newApp(app, a);
    expect((await app.inject({ url: APPS })).statusCode).toBe(401);
    const res = await app.inject({ url: APPS, headers: { authorization: `Bearer ${created.api_key}` } });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="login"');
  });

  describe('phone numbers', () => {
    it('an own sandbox number: its provider webhook is active at once and it is the displayed number', async () => {
      const { numbers } = await createSandboxAccount(app.platform.store.db, a.workspace.id);
      const created = await newApp(app, a, { name: 'Own', use_service_phone: false, phone_number_id: numbers[0]!.id });
      expect(created).toMatchObject({
        use_service_phone: false,
        phone_number_id: numbers[0]!.id,
        display_phone_number: numbers[0]!.display_phone_number,
        provider_phone_number_id: numbers[0]!.provider_phone_number_id,
      });
      expect(created.provider_webhook).toMatchObject({ status: 'active', last_error: null, provider_code: null, updated_at: expect.any(String) });
      // and back to the service number: nothing to set up, retry is 409
      const back = await app.inject({
        method: 'PATCH',
        url: `${APPS}/${created.id}`,
        headers: bearer(a.token),
        payload: { use_service_phone: true, phone_number_id: null },
      });
      expect(back.json().provider_webhook.status).toBe('not_required');
      const retry = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/provider-webhook/retry`, headers: bearer(a.token) });
      expect(retry.statusCode).toBe(409);
      expect(retry.json().type).toBe(`${PROBLEM}conflict`);
    });

    it("B3 another workspace's number or an unknown one: 404, no app created; an inactive one 422", async () => {
      const { numbers } = await createSandboxAccount(app.platform.store.db, b.workspace.id);
      const count = async () =>
        Number(
          (
            await app.platform.store.db
              .selectFrom('login_apps')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const before = await count();
      for (const id of [numbers[0]!.id, newId('pn')]) {
        const res = await app.inject({ method: 'POST', url: APPS, headers: bearer(a.token), payload: { name: 'x', phone_number_id: id } });
        expect(res.statusCode).toBe(404);
        expect(res.json().type).toBe(`${PROBLEM}not-found`);
      }
      const created = await newApp(app, a);
      const patch = await app.inject({ method: 'PATCH', url: `${APPS}/${created.id}`, headers: bearer(a.token), payload: { phone_number_id: numbers[0]!.id } });
      expect(patch.statusCode).toBe(404);
      const own = await createSandboxAccount(app.platform.store.db, a.workspace.id);
      await app.platform.store.db.updateTable('phone_numbers').set({ status: 'DISCONNECTED' }).where('id', '=', own.numbers[0]!.id).execute();
      const inactive = await app.inject({ method: 'POST', url: APPS, headers: bearer(a.token), payload: { name: 'x', phone_number_id: own.numbers[0]!.id } });
      expect(inactive.statusCode).toBe(422);
      expect(inactive.json().errors[0].pointer).toBe('/body/phone_number_id');
      expect(await count()).toBe(before + 1);
    });

    it('own number without any cloud-API number: set-up failed (no display number); retry says why with 409', async () => {
      const owner = await signUp(app, 'login-nonum');
      const created = await newApp(app, owner, { name: 'x', use_service_phone: false });
      expect(created.display_phone_number).toBeNull();
      expect(created.provider_phone_number_id).toBeNull();
      expect(created.provider_webhook).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/cloud-API number/), provider_code: null });
      const retry = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/provider-webhook/retry`, headers: bearer(owner.token) });
      expect(retry.statusCode).toBe(409);
    });

    it('resolveLoginNumber: D13 both fields 400 naming both, D14 other workspace 404 and inactive 422, defaults', async () => {
      const own = await createSandboxAccount(app.platform.store.db, a.workspace.id);
      const theirs = await createSandboxAccount(app.platform.store.db, b.workspace.id);
      const appRow = { workspace_id: a.workspace.id, use_service_phone: true, phone_number_id: null };
      await expect(resolveLoginNumber(app, appRow, { phone_number_id: own.numbers[0]!.id, use_service_phone: true })).rejects.toMatchObject({
        status: 400,
        problem: { errors: [{ pointer: '/body/phone_number_id' }, { pointer: '/body/use_service_phone' }] },
      });
      await expect(resolveLoginNumber(app, appRow, { phone_number_id: theirs.numbers[0]!.id })).rejects.toMatchObject({ status: 404 });
      expect((await resolveLoginNumber(app, appRow, { phone_number_id: own.numbers[0]!.id })).id).toBe(own.numbers[0]!.id);
      expect((await resolveLoginNumber(app, appRow)).workspace_id).toBe(SERVICE_WORKSPACE_ID);
      expect((await resolveLoginNumber(app, { ...appRow, use_service_phone: false, phone_number_id: own.numbers[0]!.id })).id).toBe(own.numbers[0]!.id);
      expect(
        (await resolveLoginNumber(app, { ...appRow, use_service_phone: false, phone_number_id: own.numbers[0]!.id }, { use_service_phone: true })).workspace_id,
      ).toBe(SERVICE_WORKSPACE_ID);
      await expect(resolveLoginNumber(app, appRow, { use_service_phone: false })).rejects.toMatchObject({ status: 422 }); // no cloud-API number
      await app.platform.store.db.updateTable('phone_numbers').set({ status: 'RESTRICTED' }).where('id', '=', own.numbers[0]!.id).execute();
      await expect(resolveLoginNumber(app, appRow, { phone_number_id: own.numbers[0]!.id })).rejects.toMatchObject({ status: 422 });
    });
  });

  it('the service number is created once, also under concurrent first calls', async () => {
    const fresh = await build();
    const numbers = await Promise.all([fresh.loginServiceNumber.get(), fresh.loginServiceNumber.get()]);
    expect(numbers[0]).toEqual(numbers[1]);
    const rows = await fresh.platform.store.db.selectFrom('phone_numbers').select('id').where('workspace_id', '=', SERVICE_WORKSPACE_ID).execute();
    expect(rows).toHaveLength(1);
    const ws = await fresh.platform.store.db.selectFrom('workspaces').selectAll().where('id', '=', SERVICE_WORKSPACE_ID).executeTakeFirstOrThrow();
    expect(ws).toMatchObject({ slug: 'platform-service', name: 'Service' });
  });
});

describe('provider webhook set-up with a Cloud API number (fake provider)', () => {
  const fake = new FakeProvider();
  let app: FastifyInstance;
  let owner: SignedUp;
  let numberId: string;
  beforeAll(async () => {
    await fake.start();
    app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
    owner = await signUp(app, 'login-cloud');
    const db = app.platform.store.db;
    const account = await db
      .insertInto('business_accounts')
      .values({
        id: newId('waba'),
        workspace_id: owner.workspace.id,
        kind: 'cloud_api',
        provider_waba_id: FAKE_WABA_ID,
        name: 'Acme',
        access_token_enc: app.platform.secrets.encrypt(FAKE_TOKEN),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    numberId = newId('pn');
    await db
      .insertInto('phone_numbers')
      .values({
        id: numberId,
        workspace_id: owner.workspace.id,
        business_account_id: account.id,
        provider_phone_number_id: '106540352242922',
        display_phone_number: '+15550100100',
        verified_name: 'Acme',
      })
      .execute();
  });
  afterAll(async () => {
    await fake.stop();
  });

  const subscriptions = () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/${FAKE_WABA_ID}/subscribed_apps`).length;

  it('subscribes at create; the primary cloud-API number is the default own number', async () => {
    const created = await newApp(app, owner, { name: 'Cloud', use_service_phone: false });
    expect(created.provider_webhook).toMatchObject({ status: 'active', last_error: null, provider_code: null });
    expect(created.display_phone_number).toBe('+15550100100');
    expect(created.provider_phone_number_id).toBe('106540352242922');
    expect(subscriptions()).toBe(1);
  });

  it('a refusal does not fail the create; retry answers 502 with the provider code, then succeeds once fixed', async () => {
    fake.reset();
    fake.fail('auth', { path: /subscribed_apps/ });
    const created = await newApp(app, owner, { name: 'Cloud', phone_number_id: numberId });
    expect(created.provider_webhook).toMatchObject({
      status: 'failed',
      provider_code: 190,
      last_error: expect.stringMatching(/^The provider refused the webhook subscription/),
    });

    fake.fail('auth', { path: /subscribed_apps/ });
    const again = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/provider-webhook/retry`, headers: bearer(owner.token) });
    expect(again.statusCode).toBe(502);
    expect(again.json()).toMatchObject({ type: `${PROBLEM}provider-error`, provider_code: 190 });
    expect((await app.inject({ url: `${APPS}/${created.id}`, headers: bearer(owner.token) })).json().provider_webhook.status).toBe('failed');

    const fixed = await app.inject({ method: 'POST', url: `${APPS}/${created.id}/provider-webhook/retry`, headers: bearer(owner.token) });
    expect(fixed.statusCode).toBe(200);
    expect(fixed.json().provider_webhook).toMatchObject({ status: 'active', last_error: null, provider_code: null });
    expect(subscriptions()).toBe(3);
  });
});

describe('G webhook URLs in production mode', () => {
  let app: FastifyInstance;
  let owner: SignedUp;
  beforeAll(async () => {
    app = await buildShared({
      env: { NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(48) },
      overrides: { lookup: async (host) => (host === 'internal.example' ? [{ address: '10.0.0.5', family: 4 }] : [{ address: '93.184.215.14', family: 4 }]) },
    });
    owner = await signUp(app, 'login-prod');
  });

  const create = (url: string, field = 'production_webhook_url') =>
    app.inject({
      method: 'POST',
      url: APPS,
      headers: bearer(owner.token),
      payload: { name: 'x', webhook_destination: field === 'production_webhook_url' ? 'production' : 'staging', [field]: url },
    });

  it('G1–G5, G8, G12: private, loopback, metadata, encoded and http targets are 422 unsafe-url naming the field', async () => {
    const urls = [
      'https://127.0.0.1/hook',
      'https://0.0.0.0/',
      'https://10.0.0.1/',
      'https://192.168.1.1/',
      'https://100.64.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://internal.example/hook',
      'http://shop.example/hook',
      'https://shop.example:6379/',
    ];
    for (const url of urls) {
      const res = await create(url);
      expect(res.statusCode, url).toBe(422);
      expect(res.json()).toMatchObject({ type: `${PROBLEM}unsafe-url`, errors: [{ pointer: '/body/production_webhook_url' }] });
    }
    const staging = await create('https://10.0.0.1/', 'staging_webhook_url');
    expect(staging.json().errors[0].pointer).toBe('/body/staging_webhook_url');
  });

  it('G11, G13: another scheme or control characters are 400; a public https URL is accepted; the update path checks too', async () => {
    for (const url of ['ftp://shop.example/x', 'javascript:alert(1)', 'https://shop.example/a\r\nb']) {
      const res = await create(url);
      expect([400], url).toContain(res.statusCode);
    }
    const created = await newApp(app, owner, {
      name: 'ok',
      use_service_phone: false,
      webhook_destination: 'production',
      production_webhook_url: 'https://shop.example/hook',
    });
    const patch = await app.inject({
      method: 'PATCH',
      url: `${APPS}/${created.id}`,
      headers: bearer(owner.token),
      payload: { staging_webhook_url: 'https://169.254.169.254/' },
    });
    expect(patch.statusCode).toBe(422);
    expect(patch.json().errors[0].pointer).toBe('/body/staging_webhook_url');
    const unchanged = (await app.inject({ url: `${APPS}/${created.id}`, headers: bearer(owner.token) })).json();
    expect(unchanged.staging_webhook_url).toBeNull();
  });

  it('without LOGIN_SERVICE_PHONE_NUMBER_ID no app gets a sandbox service number: 422 naming use_service_phone, nothing created', async () => {
    const before = (await app.inject({ url: APPS, headers: bearer(owner.token) })).json().data.length;
    for (const payload of [{ name: 'default' }, { name: 'asked', use_service_phone: true }]) {
      const res = await app.inject({ method: 'POST', url: APPS, headers: bearer(owner.token), payload });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json()).toMatchObject({
        type: `${PROBLEM}unprocessable`,
        detail: expect.stringMatching(/LOGIN_SERVICE_PHONE_NUMBER_ID is not set/),
        errors: [{ pointer: '/body/use_service_phone' }],
      });
    }
    expect((await app.inject({ url: APPS, headers: bearer(owner.token) })).json().data.length).toBe(before);
    const own = await newApp(app, owner, { name: 'own', use_service_phone: false });
    const switched = await app.inject({ method: 'PATCH', url: `${APPS}/${own.id}`, headers: bearer(owner.token), payload: { use_service_phone: true } });
    expect(switched.statusCode).toBe(422);
    expect(await app.platform.store.db.selectFrom('workspaces').select('id').where('id', '=', SERVICE_WORKSPACE_ID).executeTakeFirst()).toBeUndefined();
  });
});
