// Login sessions: start, status and the state machine (pending → success, pending → expired,
// nothing else), the inbound LOGIN path end to end (sandbox phone and signed provider webhook),
// the server webhook through the outbox (bad-inputs F2, F8), and catalogue group D cases bad-inputs D2–D6, D13–D16.
// One app for the file with an injected clock that only moves forward; each test makes its own
// workspace and Login app (rows inserted directly, as the Login-app API is not what is tested).
// A jump of the injected clock wakes no timer: the expiry sweep finds what it made due at its
// idle re-check, shortened here to half a second (WORKER_IDLE_MS).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { startReceiver } from '#test/support/receiver.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { newSecret } from '#server/lib/ids.js';
import { sha256Header } from '#server/lib/signatures.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { canonicalCode, newLoginCode, waLink } from '#server/apis/login/sessions.js';
import { loginCodeOf } from '#server/apis/login/verification.js';
import { elapse, eventually } from '#test/support/eventually.js';

const PROBLEMS = 'https://chatapp.example/problems/';
let clock = Date.parse('2026-11-23T09:30:00Z');
let app: FastifyInstance;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let answer = 200;

beforeAll(async () => {
  app = await buildShared({ env: { WORKER_IDLE_MS: '500' }, overrides: { now: () => new Date(clock) } });
  receiver = await startReceiver(() => answer);
});
afterAll(() => receiver.close());

interface FixtureOptions {
  cap?: number;
  webhook?: boolean;
}

async function fixture({ cap, webhook = false }: FixtureOptions = {}) {
  const a = await insertLoginApp(app, { cap, numbers: 2, webhookUrl: webhook ? receiver.url : undefined });
  return { workspaceId: a.workspaceId, appId: a.appId, apiKey: a.apiKey, webhookSecret: a.webhookSecret, pn: a.numbers[0]!, otherPn: a.numbers[1]! };
}
type Fixture = Awaited<ReturnType<typeof fixture>>;

const start = (f: Fixture, body?: object) =>
  app.inject({
    method: 'POST',
    url: '/v1/auth/chatapp/start',
    headers: { 'x-api-key': f.apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    payload: body ? JSON.stringify(body) : undefined,
  });
const status = (f: Fixture, id: string) => app.inject({ method: 'GET', url: `/v1/auth/chatapp/status/${id}`, headers: { 'x-api-key': f.apiKey } });
const session = (id: string) => app.platform.store.db.selectFrom('login_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const events = (id: string) => app.platform.store.db.selectFrom('login_session_events').select(['id', 'event']).where('session_id', '=', id).execute();
const outboxRows = (appId: string) => app.platform.store.db.selectFrom('outbox').selectAll().where('endpoint_id', '=', appId).execute();

async function started(f: Fixture) {
  const res = await start(f, {});
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as {
    sessionId: string;
    loginCode: string;
    waLink: string;
    subscribeToken: string;
    expiresAt: string;
    qrCodeSvg: string;
    displayPhoneNumber: string;
  };
}

/** Sends `text` from the sandbox phone to `pn` and waits until the message event has been handled. */
async function phone(pn: { id: string }, text: string, from = '+15550100202', name = 'Ana Souza') {
  await sendFromSandboxPhone(app, { phoneNumberId: pn.id, from, name, text });
  await settle();
}
/** Bus events arrive asynchronously (NOTIFY); verification runs after them. */
const settle = (ms = 150) => elapse(ms, 'verification runs after the bus event, with no answer to wait on');
/** The last value of `fn`: once `ok` holds, or when the time is up (the caller asserts on it). */
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  let last!: T;
  await eventually(async () => ok((last = await fn())), { within: ms }).catch(() => {});
  return last;
}

describe('login codes and messages', () => {
  it('codes are 8 Crockford base32 characters; matching is case-insensitive and tolerant', () => {
    const codes = new Set(Array.from({ length: 1000 }, newLoginCode));
    expect(codes.size).toBe(1000);
    for (const code of codes) expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(canonicalCode('k7q2m9xd')).toBe('K7Q2M9XD');
    expect(canonicalCode('OIL00000')).toBe('01100000'); // Crockford decoding of look-alikes
    expect(canonicalCode('K7Q2M9XU')).toBeNull();
    for (const text of [
      'LOGIN K7Q2M9XD',
      'login k7q2m9xd',
      '  Login   K7Q2M9XD!  ',
      'LOGIN: K7Q2M9XD.',
      'LOGIN-k7q2m9xd?',
      'login\u3000K7Q2M9XD',
      '\uFEFFLO\u200BGIN K7Q2\u00ADM9XD',
      'LOGIN\u00A0K7Q2M9XD\u2060',
    ]) {
      expect(loginCodeOf(text), text).toBe('K7Q2M9XD');
    }
    for (const text of [
      'LOGIN K7Q2M9X',
      'LOGIN K7Q2M9XDD',
      'please LOGIN K7Q2M9XD',
      'LOGIN K7Q2M9XD!!',
      'LOGINK7Q2M9XDX',
      '',
      'L\u041EGIN K7Q2M9XD',
      'LOGIN \u041A7Q2M9XD',
    ]) {
      expect(loginCodeOf(text), text).toBeNull();
    }
    expect(waLink('+1 415-555-0123', 'K7Q2M9XD')).toBe('https://wa.me/14155550123?text=LOGIN%20K7Q2M9XD');
  });
});

describe('start and status', () => {
  it('start answers 201 with code, deep link, QR, subscribe token and expiry; only digests are stored', async () => {
    const f = await fixture();
    const res = await start(f);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(res.headers.location).toBe(`/v1/auth/chatapp/status/${body.sessionId}`);
    expect(body).toMatchObject({ status: 'pending', authAppName: 'Acme Shop', displayPhoneNumber: f.pn.display_phone_number });
    expect(body.sessionId).toMatch(/^ls_[0-9A-Za-z]{20}$/);
    expect(body.loginCode).toMatch(/^[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(body.waLink).toBe(`https://wa.me/${f.pn.display_phone_number.slice(1)}?text=LOGIN%20${body.loginCode}`);
    expect(body.subscribeToken.length).toBeGreaterThanOrEqual(32);
    expect(body.qrCodeSvg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[\s\S]*<\/svg>\s*$/);
    expect(body.qrCodeSvg).not.toMatch(/<script|href=/i);
    expect(Date.parse(body.expiresAt) - clock).toBe(600_000);
    const row = await session(body.sessionId);
    expect(JSON.stringify(row)).not.toContain(body.subscribeToken);
    expect(row.subscribe_token_digest).toBe(app.platform.secrets.digest(body.subscribeToken));

    const pending = await status(f, body.sessionId);
    expect(pending.statusCode).toBe(200);
    expect(pending.headers['cache-control']).toBe('no-store');
    expect(pending.json()).toEqual({ sessionId: body.sessionId, status: 'pending', expiresAt: body.expiresAt, mode: 'message', ignoredLogins: 0 });
  });

  it('D13 phone_number_id with use_service_phone: 400 naming both; no session', async () => {
    const f = await fixture();
    const res = await start(f, { phone_number_id: f.pn.id, use_service_phone: true });
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(`${PROBLEMS}validation`);
    expect(
      res
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
    ).toEqual(['/body/phone_number_id', '/body/use_service_phone']);
    expect(await app.platform.store.db.selectFrom('login_sessions').select('id').where('app_id', '=', f.appId).execute()).toEqual([]);
  });

  it("D14 another workspace's number: 404; no session", async () => {
    const [a, b] = [await fixture(), await fixture()];
    const res = await start(a, { phone_number_id: b.pn.id });
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    expect(await app.platform.store.db.selectFrom('login_sessions').select('id').where('app_id', '=', a.appId).execute()).toEqual([]);
  });

  it('D15 the plan cap reached: 402 plan-limit naming the cap and upgrade_url; no session; a new month starts afresh', async () => {
    const f = await fixture({ cap: 2 });
    await started(f);
    await started(f);
    const res = await start(f);
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}plan-limit`, status: 402, upgrade_url: expect.stringMatching(/^http.*upgrade=login-sessions$/) });
    expect(res.json().detail).toMatch(/allows 2 login sessions a month/);
    expect(await app.platform.store.db.selectFrom('login_sessions').select('id').where('app_id', '=', f.appId).execute()).toHaveLength(2);
    clock = Date.parse('2026-12-01T00:00:01Z'); // the count is per calendar month (UTC)
    expect((await start(f)).statusCode).toBe(201);
  });

  it("D16 status of an unknown session or another app's: 404", async () => {
    const [a, b] = [await fixture(), await fixture()];
    const s = await started(a);
    for (const res of [await status(b, s.sessionId), await status(a, 'ls_0000000000000000')]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    }
  });
});

describe('the state machine', () => {
  it('pending → success through the sandbox phone: phone in E.164, profile name, one verified event, status gives the token', async () => {
    const f = await fixture();
    const s = await started(f);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    const row = await until(
      () => session(s.sessionId),
      (r) => r.status === 'success',
    );
    expect(row).toMatchObject({ status: 'success', phone: '+15550100202', profile_name: 'Ana Souza' });
    expect((await events(s.sessionId)).map((e) => e.event)).toEqual(['verified']);
    const res = await status(f, s.sessionId);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ sessionId: s.sessionId, status: 'success', verifiedAt: new Date(clock).toISOString() });
    expect(body.verificationToken).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(Date.parse(body.verificationTokenExpiresAt) - clock).toBe(300_000);
    expect((await status(f, s.sessionId)).json().verificationToken).toBe(body.verificationToken); // the same token every time
    expect(JSON.stringify(row)).not.toContain(body.verificationToken); // sealed at rest
  });

  it('D3 the code in lower case with extra spaces and punctuation, from "15550100202" in a signed webhook: verified as +15550100202', async () => {
    const f = await fixture();
    const s = await started(f);
    const res = await providerPost(f, 'wamid.D3', `  login   ${s.loginCode.toLowerCase()}! `, '15550100202');
    expect(res.statusCode).toBe(200);
    const row = await until(
      () => session(s.sessionId),
      (r) => r.status === 'success',
    );
    expect(row.phone).toBe('+15550100202');
    expect(await app.platform.store.db.selectFrom('contacts').select('id').where('workspace_id', '=', f.workspaceId).execute()).toHaveLength(1);
  });

  it('D2 a wrong code changes nothing: still pending, no event, no token, no webhook', async () => {
    const f = await fixture({ webhook: true });
    const s = await started(f);
    const wrong = s.loginCode === 'ABCDEFGH' ? 'ABCDEFGJ' : 'ABCDEFGH';
    await phone(f.pn, `LOGIN ${wrong}`);
    await phone(f.pn, `hello, LOGIN ${s.loginCode} please`); // the code, but not a LOGIN message
    expect(await session(s.sessionId)).toMatchObject({ status: 'pending', phone: null, token_jti: null });
    expect(await events(s.sessionId)).toEqual([]);
    expect(await outboxRows(f.appId)).toEqual([]);
  });

  it('D4 a replayed message id changes nothing: 200 to the provider, no second event, token or webhook', async () => {
    const f = await fixture({ webhook: true });
    const first = await started(f);
    expect((await providerPost(f, 'wamid.D4', `LOGIN ${first.loginCode}`)).statusCode).toBe(200);
    const verified = await until(
      () => session(first.sessionId),
      (r) => r.status === 'success',
    );
    // The same message id again; and again carrying a second pending session's code.
    const second = await started(f);
    expect((await providerPost(f, 'wamid.D4', `LOGIN ${first.loginCode}`)).statusCode).toBe(200);
    expect((await providerPost(f, 'wamid.D4', `LOGIN ${second.loginCode}`)).statusCode).toBe(200);
    await settle();
    expect(await session(first.sessionId)).toEqual(verified);
    expect(await events(first.sessionId)).toHaveLength(1);
    expect((await session(second.sessionId)).status).toBe('pending');
    expect(await outboxRows(f.appId)).toHaveLength(1);
  });

  it('D5 the right code after expiry (clock +11 min): stays expired; status 410 expired, no token', async () => {
    const f = await fixture({ webhook: true });
    const s = await started(f);
    clock += 11 * 60_000;
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    const row = await session(s.sessionId);
    expect(row.status === 'pending' || row.status === 'expired').toBe(true); // the sweep may not have run yet
    expect(row.token_jti).toBeNull();
    const res = await status(f, s.sessionId);
    expect(res.statusCode).toBe(410);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}expired`, status: 410 });
    expect(res.body).not.toContain('verificationToken');
    expect((await session(s.sessionId)).status).toBe('expired');
    expect((await events(s.sessionId)).map((e) => e.event)).toEqual(['expired']);
    expect(await outboxRows(f.appId)).toEqual([]);
  });

  it("D6 the right code sent to another number (the workspace's other one, or another workspace's): not verified", async () => {
    const [f, other] = [await fixture(), await fixture()];
    const s = await started(f);
    await phone(f.otherPn, `LOGIN ${s.loginCode}`);
    await phone(other.pn, `LOGIN ${s.loginCode}`);
    expect((await session(s.sessionId)).status).toBe('pending');
    expect(await events(s.sessionId)).toEqual([]);
  });

  it('pending → expired by the sweep: one expired event; a later LOGIN changes nothing', async () => {
    const f = await fixture();
    const s = await started(f);
    clock += 600_000; // exactly at expiresAt
    const row = await until(
      () => session(s.sessionId),
      (r) => r.status === 'expired',
    );
    expect(row.status).toBe('expired');
    expect((await events(s.sessionId)).map((e) => e.event)).toEqual(['expired']);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    expect(await session(s.sessionId)).toEqual(row);
    expect(await events(s.sessionId)).toHaveLength(1);
  });

  it('a success never expires: the sweep leaves it, status keeps answering success', async () => {
    const f = await fixture();
    const s = await started(f);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    await until(
      () => session(s.sessionId),
      (r) => r.status === 'success',
    );
    clock += 20 * 60_000;
    await settle(1200); // a sweep runs every half second (WORKER_IDLE_MS)
    expect((await session(s.sessionId)).status).toBe('success');
    expect((await status(f, s.sessionId)).json().status).toBe('success');
    expect((await events(s.sessionId)).map((e) => e.event)).toEqual(['verified']);
  });
});

describe('server webhook chatapp.auth.verified', () => {
  it('F2 delivered through the outbox, signed sha256=<hex HMAC of the raw body> that a plain HMAC check verifies, body per the contract', async () => {
    answer = 200;
    receiver.received.length = 0;
    const f = await fixture({ webhook: true });
    const s = await started(f);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    await until(
      async () => receiver.received.length,
      (n) => n >= 1,
    );
    expect(receiver.received).toHaveLength(1);
    const { headers, body } = receiver.received[0]!;
    const expected = createHmac('sha256', f.webhookSecret).update(body).digest('hex');
    expect(headers['x-login-signature']).toBe(`sha256=${expected}`);
    expect(timingSafeEqual(Buffer.from(String(headers['x-login-signature'])), Buffer.from(`sha256=${expected}`))).toBe(true);
    const event = JSON.parse(body);
    expect(headers['x-login-event-id']).toBe(event.id);
    const token = (await status(f, s.sessionId)).json().verificationToken;
    const verifiedAt = new Date(clock).toISOString();
    const facts = { session_id: s.sessionId, phone: '+15550100202', profile_name: 'Ana Souza', verified_at: verifiedAt, verification_token: token };
    expect(Object.keys(event)).toEqual(['id', 'type', 'created', 'data', 'event', 'session_id', 'phone', 'profile_name', 'verified_at', 'verification_token']);
    expect(event).toEqual({
      id: event.id,
      type: 'chatapp.auth.verified',
      created: Math.floor(clock / 1000),
      data: { app_id: f.appId, ...facts },
      event: 'chatapp.auth.verified',
      ...facts,
    });
    expect(event.id).toMatch(/^evt_[0-9A-Za-z]{8,48}$/);
  });

  it('F2 during a secret rotation overlap: sha256=<new>,sha256=<old>, each verifying with its secret', async () => {
    answer = 200;
    receiver.received.length = 0;
    const f = await fixture({ webhook: true });
    const old = newSecret('whsec_');
    await app.platform.store.db
      .updateTable('login_apps')
      .set({ previous_webhook_secret_enc: app.platform.secrets.encrypt(old), previous_webhook_secret_until: new Date(clock + 3600_000) })
      .where('id', '=', f.appId)
      .execute();
    const s = await started(f);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    await until(
      async () => receiver.received.length,
      (n) => n >= 1,
    );
    const { headers, body } = receiver.received[0]!;
    expect(headers['x-login-signature']).toBe(`${sha256Header(f.webhookSecret, body)},${sha256Header(old, body)}`);
  });

  it('F8 several attempts of one event: the same id in body and header, identical body bytes, signature each time', async () => {
    receiver.received.length = 0;
    answer = 500;
    const f = await fixture({ webhook: true });
    const s = await started(f);
    await phone(f.pn, `LOGIN ${s.loginCode}`);
    await until(
      async () => receiver.received.length,
      (n) => n >= 1,
    );
    answer = 200;
    clock += 6_000; // past the first retry delay (5 s ± 10 %)
    await app.platform.outbox.runOnce();
    await until(
      async () => receiver.received.length,
      (n) => n >= 2,
    );
    const [a, b] = receiver.received;
    expect(b!.body).toBe(a!.body);
    expect(b!.headers['x-login-event-id']).toBe(a!.headers['x-login-event-id']);
    expect(b!.headers['x-login-event-id']).toBe(JSON.parse(b!.body).id);
    expect(b!.headers['x-login-signature']).toBe(sha256Header(f.webhookSecret, b!.body));
    const [row] = await outboxRows(f.appId);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
  });
});

/** A signed inbound provider webhook with one text message (as the Cloud API posts it). */
function providerPost(f: Fixture, wamid: string, text: string, from = '15550100202') {
  const payload = {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: f.pn.display_phone_number.slice(1), phone_number_id: f.pn.provider_phone_number_id },
              contacts: [{ profile: { name: 'Ana Souza' }, wa_id: from }],
              messages: [{ from, id: wamid, timestamp: String(Math.floor(clock / 1000)), type: 'text', text: { body: text } }],
            },
          },
        ],
      },
    ],
  };
  const raw = JSON.stringify(payload);
  return app.inject({
    method: 'POST',
    url: '/api/webhook/chatapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, raw) },
    payload: raw,
  });
}
