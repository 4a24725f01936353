// Phone-bound sessions and the code direction (issue 30, items 5 and 6): `start` with `phone`
// binds the session (another number's LOGIN is ignored and counted), `mode: "code"` sends a
// 6-digit code through the authentication template (sandbox: the simulated phone's conversation;
// Cloud API: the fake Graph API on 127.0.0.1), check verifies it with the same token as a LOGIN,
// at most 5 wrong codes, expiry, resend with a cool-down. One app for the file with an injected
// clock that only moves forward; each test makes its own workspace and Login app.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { buildShared } from '#test/helper.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { elapse } from '#test/support/eventually.js';
import { newId } from '#server/lib/ids.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { RESEND_COOLDOWN_MS } from '#server/apis/login/codes.js';

const PROBLEMS = 'https://chatapp.example/problems/';
const USER = '+5511987654321';
let clock = Date.parse('2026-11-23T09:30:00Z');
let app: FastifyInstance;
let fake: FakeProvider;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl }, overrides: { now: () => new Date(clock) } });
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

type Fixture = Awaited<ReturnType<typeof insertLoginApp>>;
const fixture = () => insertLoginApp(app);

const json = (f: Fixture, method: 'POST' | 'GET', url: string, body?: object) =>
  app.inject({
    method,
    url,
    headers: { 'x-api-key': f.apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    payload: body ? JSON.stringify(body) : undefined,
  });
const start = (f: Fixture, body: object) => json(f, 'POST', '/v1/auth/chatapp/start', body);
const status = (f: Fixture, id: string) => json(f, 'GET', `/v1/auth/chatapp/status/${id}`);
const check = (f: Fixture, id: string, code: string) => json(f, 'POST', `/v1/auth/chatapp/check/${id}`, { code });
const resend = (f: Fixture, id: string) => json(f, 'POST', `/v1/auth/chatapp/resend/${id}`);
const row = (id: string) => app.platform.store.db.selectFrom('login_sessions').selectAll().where('id', '=', id).executeTakeFirst();
const events = (id: string) => app.platform.store.db.selectFrom('login_session_events').select('event').where('session_id', '=', id).execute();

async function started(f: Fixture, body: object) {
  const res = await start(f, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { sessionId: string; loginCode: string; boundPhone?: string; mode: string; resendAvailableAt?: string; expiresAt: string };
}

/** The codes the sandbox number sent to `to`, newest last, read from the conversation as the simulated phone shows it. */
async function codesSent(workspaceId: string, to: string): Promise<string[]> {
  const rows = await app.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.content', 'messages.created_at', 'messages.id'])
    .where('messages.workspace_id', '=', workspaceId)
    .where('messages.direction', '=', 'outbound')
    .where('contacts.phone', '=', to)
    .orderBy('messages.created_at')
    .orderBy('messages.id')
    .execute();
  return rows.map((r) => {
    const content = (typeof r.content === 'string' ? JSON.parse(r.content) : r.content) as { text: string; template: { category: string } };
    expect(content.template.category).toBe('AUTHENTICATION');
    return /^(\d{6}) is your verification code/.exec(content.text)![1]!;
  });
}

async function login(pn: { id: string }, text: string, from: string) {
  await sendFromSandboxPhone(app, { phoneNumberId: pn.id, from, name: 'Ana', text });
  await elapse(150, 'verification runs in the inbound transaction; the bus event after it');
}

describe('phone-bound sessions (start with phone)', () => {
  it('binds the session to the E.164 of phone; only that number verifies, others are ignored and counted', async () => {
    const f = await fixture();
    const s = await started(f, { phone: '+55 (11) 98765-4321' });
    expect(s).toMatchObject({ mode: 'message', boundPhone: USER });
    expect(s.resendAvailableAt).toBeUndefined();
    expect((await status(f, s.sessionId)).json()).toMatchObject({ status: 'pending', boundPhone: USER, ignoredLogins: 0 });

    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, '+15550100202');
    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, '+15550100203');
    const ignored = (await status(f, s.sessionId)).json();
    expect(ignored).toMatchObject({ status: 'pending', ignoredLogins: 2 });
    expect(ignored.verificationToken).toBeUndefined();
    expect(await events(s.sessionId)).toEqual([]);

    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, USER);
    const done = (await status(f, s.sessionId)).json();
    expect(done).toMatchObject({ status: 'success', ignoredLogins: 2, boundPhone: USER });
    expect(decodeJwt(done.verificationToken).sub).toBe(USER);
  });

  it('a session without phone is verified by any number, as before', async () => {
    const f = await fixture();
    const s = await started(f, {});
    expect(s.boundPhone).toBeUndefined();
    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, '+15550100202');
    expect((await status(f, s.sessionId)).json()).toMatchObject({ status: 'success', ignoredLogins: 0 });
  });

  it('a malformed phone answers 400 naming /body/phone and starts nothing', async () => {
    const f = await fixture();
    for (const phone of ['12', '+1 555', 'call me', '+999999999999999999']) {
      const res = await start(f, { phone });
      expect(res.statusCode, phone).toBe(400);
      expect(res.json()).toMatchObject({ type: `${PROBLEMS}validation`, errors: [{ pointer: '/body/phone' }] });
    }
    const n = await app.platform.store.db.selectFrom('login_sessions').select('id').where('app_id', '=', f.appId).execute();
    expect(n).toHaveLength(0);
  });
});

describe('codes sent to the user (mode code, sandbox)', () => {
  it('sends a 6-digit code as the authentication template; the right code verifies with the same token as status', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    expect(s).toMatchObject({ mode: 'code', boundPhone: USER });
    expect(Date.parse(s.resendAvailableAt!) - clock).toBe(RESEND_COOLDOWN_MS);
    const [code] = await codesSent(f.workspaceId, USER);
    expect(code).toMatch(/^\d{6}$/);
    const stored = await row(s.sessionId);
    expect(JSON.stringify(stored)).not.toContain(`"${code}"`);
    expect(stored!.code_digest).toMatch(/^[0-9a-f]{64}$/);
    expect((await status(f, s.sessionId)).json()).toMatchObject({ status: 'pending', codeAttemptsLeft: 5 });

    const res = await check(f, s.sessionId, code!);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toMatchObject({ status: 'success', mode: 'code', boundPhone: USER });
    expect(decodeJwt(body.verificationToken)).toMatchObject({ sub: USER, sid: s.sessionId, aud: f.appId });
    expect((await status(f, s.sessionId)).json().verificationToken).toBe(body.verificationToken);
    expect(await events(s.sessionId)).toEqual([{ event: 'verified' }]);
    // Redeemed like any verification token.
    const redeemed = await json(f, 'POST', '/v1/auth/verify-token', { token: body.verificationToken });
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    // Checking again: already verified.
    expect((await check(f, s.sessionId, code!)).statusCode).toBe(409);
  });

  it('wrong code ×5 locks the session: 422 with attempts left, then 409 even for the right code; resend refused', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    const [code] = await codesSent(f.workspaceId, USER);
    const wrong = code === '000000' ? '000001' : '000000';
    for (let left = 4; left >= 0; left--) {
      const res = await check(f, s.sessionId, wrong);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, errors: [{ pointer: '/body/code' }] });
      expect(res.json().detail).toContain(left ? `${left} attempt` : 'locked');
    }
    const lockedOut = await check(f, s.sessionId, code!);
    expect(lockedOut.statusCode).toBe(409);
    expect(lockedOut.json().detail).toContain('locked');
    clock += RESEND_COOLDOWN_MS;
    expect((await resend(f, s.sessionId)).statusCode).toBe(409);
    expect((await status(f, s.sessionId)).json()).toMatchObject({ status: 'pending', codeAttemptsLeft: 0 });
    expect(await codesSent(f.workspaceId, USER)).toHaveLength(1);
  });

  it('a malformed code answers 400 and costs no attempt', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    for (const code of ['12345', '1234567', 'abcdef', '12 345', '']) {
      const res = await check(f, s.sessionId, code);
      expect(res.statusCode, code).toBe(400);
      expect(res.json().type).toBe(`${PROBLEMS}validation`);
    }
    expect((await row(s.sessionId))!.code_attempts).toBe(0);
  });

  it('an expired session answers 410 to check and resend, with the expired event', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    const [code] = await codesSent(f.workspaceId, USER);
    clock = Date.parse(s.expiresAt) + 1000;
    const res = await check(f, s.sessionId, code!);
    expect(res.statusCode, res.body).toBe(410);
    expect(res.json().type).toBe(`${PROBLEMS}expired`);
    expect((await resend(f, s.sessionId)).statusCode).toBe(410);
    expect(await events(s.sessionId)).toEqual([{ event: 'expired' }]);
  });

  it('resend: 429 with Retry-After during the cool-down; then a new code, and the old one no longer verifies', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    clock += 9_000;
    const soon = await resend(f, s.sessionId);
    expect(soon.statusCode).toBe(429);
    expect(soon.headers['retry-after']).toBe('21');
    expect(soon.json().type).toBe(`${PROBLEMS}rate-limited`);
    expect(await codesSent(f.workspaceId, USER)).toHaveLength(1);

    clock += 21_000;
    const again = await resend(f, s.sessionId);
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json()).toMatchObject({ sessionId: s.sessionId, boundPhone: USER, expiresAt: s.expiresAt });
    const [first, second] = await codesSent(f.workspaceId, USER);
    if (first !== second) expect((await check(f, s.sessionId, first!)).statusCode).toBe(422);
    expect((await check(f, s.sessionId, second!)).statusCode).toBe(200);
  });

  it('at most 5 codes per session: the fifth resend answers 409', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    for (let i = 0; i < 4; i++) {
      clock += RESEND_COOLDOWN_MS;
      expect((await resend(f, s.sessionId)).statusCode).toBe(202);
    }
    clock += RESEND_COOLDOWN_MS;
    const res = await resend(f, s.sessionId);
    expect(res.statusCode).toBe(409);
    expect(await codesSent(f.workspaceId, USER)).toHaveLength(5);
  });

  it('mode code needs phone (400); check and resend on a message-mode session 409; another app’s session 404', async () => {
    const f = await fixture();
    const other = await fixture();
    const res = await start(f, { mode: 'code' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ pointer: '/body/phone' }] });
    const plain = await started(f, { phone: USER });
    expect((await check(f, plain.sessionId, '123456')).statusCode).toBe(409);
    expect((await resend(f, plain.sessionId)).statusCode).toBe(409);
    const coded = await started(f, { phone: USER, mode: 'code' });
    const [code] = await codesSent(f.workspaceId, USER);
    expect((await check(other, coded.sessionId, code!)).statusCode).toBe(404);
    expect((await resend(other, coded.sessionId)).statusCode).toBe(404);
    expect((await row(coded.sessionId))!.status).toBe('pending');
  });

  it('a LOGIN from the bound phone verifies a code-mode session too; another number’s does not', async () => {
    const f = await fixture();
    const s = await started(f, { phone: USER, mode: 'code' });
    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, '+15550100202');
    expect((await status(f, s.sessionId)).json()).toMatchObject({ status: 'pending', ignoredLogins: 1 });
    await login(f.numbers[0]!, `LOGIN ${s.loginCode}`, USER);
    expect((await status(f, s.sessionId)).json().status).toBe('success');
  });
});

describe('codes through the Cloud API adapter (fake Graph API)', () => {
  // The fake has one Cloud API number, and a provider number id is connected once: one app.
  let cloud: Promise<{ f: Fixture; pn: { id: string } }> | undefined;
  const cloudApp = () => (cloud ??= connectCloud());
  async function connectCloud() {
    const f = await insertLoginApp(app);
    const db = app.platform.store.db;
    const account = await db
      .insertInto('business_accounts')
      .values({
        id: newId('waba'),
        workspace_id: f.workspaceId,
        kind: 'cloud_api',
        provider_waba_id: FAKE_WABA_ID,
        name: 'Acme',
        access_token_enc: app.platform.secrets.encrypt(FAKE_TOKEN),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const pn = await db
      .insertInto('phone_numbers')
      .values({
        id: newId('pn'),
        workspace_id: f.workspaceId,
        business_account_id: account.id,
        provider_phone_number_id: FAKE_PHONE_NUMBER_ID,
        display_phone_number: '+15550100100',
        verified_name: 'Acme',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { f, pn };
  }
  const messageCalls = () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/${FAKE_PHONE_NUMBER_ID}/messages`);

  it('POST /{phone-number-id}/messages with the authentication template: the code as body parameter and copy-code (url) button', async () => {
    const { f, pn } = await cloudApp();
    const s = await started(f, { phone: USER, mode: 'code', phone_number_id: pn.id });
    expect(messageCalls()).toHaveLength(1);
    const call = messageCalls()[0]!;
    expect(call.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(call.body).toMatchObject({
      messaging_product: 'whatsapp',
      to: USER.slice(1),
      type: 'template',
      template: { name: 'login_code', language: { code: 'en_US' } },
    });
    const [body, button] = call.body.template.components;
    const code = body.parameters[0].text as string;
    expect(code).toMatch(/^\d{6}$/);
    expect(body).toEqual({ type: 'body', parameters: [{ type: 'text', text: code }] });
    expect(button).toMatchObject({ type: 'button', sub_type: 'url', parameters: [{ type: 'text', text: code }] });
    expect(String(button.index)).toBe('0');
    // Our copy of the message keeps the code masked.
    const stored = await app.platform.store.db.selectFrom('messages').select('content').where('workspace_id', '=', f.workspaceId).execute();
    expect(JSON.stringify(stored)).not.toContain(code);
    expect((await check(f, s.sessionId, code)).json().status).toBe('success');
  });

  it('a refused send answers the provider problem and leaves no session', async () => {
    const { f, pn } = await cloudApp();
    fake.fail('invalid-number', { path: /\/messages$/ });
    const res = await start(f, { phone: USER, mode: 'code', phone_number_id: pn.id });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}unprocessable`);
    const rows = await app.platform.store.db.selectFrom('login_sessions').select('id').where('app_id', '=', f.appId).where('status', '=', 'pending').execute();
    expect(rows).toHaveLength(0);
  });
});
