// Catalogue group D (Login sessions and verification tokens) against the shared fixture: each
// workspace's Login app (`loginKey`) on its sandbox number. LOGIN messages arrive as signed
// provider webhooks (test/security/inbound.ts). The clock is injected and only moves forward.
// bad-inputs D8 is a race: PGlite has one connection, so it runs on PostgreSQL only (DATABASE_URL).
// bad-inputs D9–D12: the contract gives a `reason` per failure (invalid_signature, invalid_claims, expired,
// malformed); "one answer" here means valid:false without user data, and the token not consumed.
import { createHmac } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { buildShared } from '../helper.js';
import { onPostgres } from '../support/store.js';
import { startReceiver } from '../support/receiver.js';
import { forgeLoginToken } from '../support/login-keys.js';
import { insertLoginApp } from '../support/login-app.js';
import { expectNoChange, expectProblem, workspace, type Workspace } from './support.js';
import { inbound, postInbound, settle, textMessage, until, type Inbox } from './inbound.js';

let clock = Date.parse('2026-11-23T09:30:00Z');
const app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '100000' }, overrides: { now: () => new Date(clock) } });
const jwksHost = await startReceiver();
afterAll(() => jwksHost.close());

// Tables an inbound message writes whatever its text says (the message itself, its chat).
const INBOUND_ROWS = ['messages', 'chats', 'contacts', 'automation_inbound_claims'];

const start = (w: { loginKey: string }, body?: object) =>
  app.inject({
    method: 'POST',
    url: '/v1/auth/chatapp/start',
    headers: { 'x-api-key': w.loginKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    payload: body ? JSON.stringify(body) : undefined,
  });
const status = (w: { loginKey: string }, id: string) => app.inject({ url: `/v1/auth/chatapp/status/${id}`, headers: { 'x-api-key': w.loginKey } });
const verify = (w: { loginKey: string }, token: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/auth/verify-token',
    headers: { 'x-api-key': w.loginKey, 'content-type': 'application/json' },
    payload: JSON.stringify({ token }),
  });
const sessionRow = (id: string) => app.platform.store.db.selectFrom('login_sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

async function started(w: { loginKey: string }) {
  const res = await start(w);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { sessionId: string; loginCode: string; subscribeToken: string };
}

let wamid = 0;
/** A LOGIN-style text from `from` to `to`, through the signed provider webhook. */
async function say(to: Inbox, text: string, from?: string, id = `wamid.D${++wamid}`) {
  const res = await postInbound(app, inbound(to, [textMessage(id, text, from, clock)], from));
  expect(res.statusCode).toBe(200);
  await settle();
  return id;
}

/** A verified session of `w` and its verification token. */
async function verifiedToken(w: Workspace) {
  const s = await started(w);
  await say(w, `LOGIN ${s.loginCode}`);
  const body = await until(
    async () => (await status(w, s.sessionId)).json(),
    (b) => Boolean(b.verificationToken),
  );
  expect(body.verificationToken, JSON.stringify(body)).toBeTruthy();
  return { sessionId: s.sessionId, token: body.verificationToken as string };
}

/** A new session of `w` verified by the text `write(code)` makes of its code, or the test fails. */
async function verifiedBy(w: Workspace, write: (code: string) => string) {
  const s = await started(w);
  const text = write(s.loginCode);
  await say(w, text);
  const row = await until(
    () => sessionRow(s.sessionId),
    (r) => r.status === 'success',
  );
  expect(row.status, JSON.stringify(text)).toBe('success');
}

/** Cyrillic and Greek letters drawn like the Latin ones (and Cyrillic О like the digit 0). */
const LOOK_ALIKES: Record<string, string> = {
  A: '\u0410',
  B: '\u0412',
  C: '\u0421',
  E: '\u0415',
  H: '\u041D',
  K: '\u041A',
  M: '\u041C',
  P: '\u0420',
  T: '\u0422',
  X: '\u0425',
  N: '\u039D',
  Z: '\u0396',
  '0': '\u041E',
};

const forged = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) => forgeLoginToken(app, claims, header);

/** Each token refused without user data; then the real one still verifies once (none consumed it). */
async function expectAllInvalid(w: Workspace, real: string, tokens: string[]) {
  await expectNoChange(app, async () => {
    for (const t of tokens) {
      const res = await verify(w, t);
      expect(res.statusCode, t.slice(0, 40)).toBe(200);
      expect(res.json()).toEqual({ valid: false, reason: expect.any(String) });
    }
  });
  expect((await verify(w, real)).json().valid).toBe(true);
}

describe('D. Login sessions and verification tokens', () => {
  it("D1 event stream with another session's subscribeToken, a random one, or none: 401 unauthorized, no stream", async () => {
    const a = await workspace(app);
    const [s, other] = [await started(a), await started(a)];
    const url = (token?: string) => `/v1/auth/chatapp/events/${s.sessionId}${token === undefined ? '' : `?token=${encodeURIComponent(token)}`}`;
    await expectNoChange(app, async () => {
      for (const u of [url(other.subscribeToken), url(`st_${'x'.repeat(40)}`), url(), url(s.subscribeToken.slice(0, -1))]) {
        const res = await app.inject({ url: u });
        expectProblem(res, 401, 'unauthorized');
        expect(res.body).not.toContain(other.subscribeToken);
      }
    });
    expect(app.loginStreams.count(s.sessionId)).toBe(0);
  });

  it('D2 signed LOGIN message with a wrong code: no session change, no event, no token', async () => {
    const a = await workspace(app);
    const s = await started(a);
    await say(a, 'hello'); // the contact and chat exist first
    const before = await sessionRow(s.sessionId);
    const wrong = s.loginCode === 'ABCDEFGH' ? 'ABCDEFGJ' : 'ABCDEFGH';
    await expectNoChange(app, () => say(a, `LOGIN ${wrong}`), { ignore: INBOUND_ROWS });
    expect(await sessionRow(s.sessionId)).toEqual(before);
    expect((await status(a, s.sessionId)).json()).not.toHaveProperty('verificationToken');
  });

  it('D3 right code from "15550100202", contact stored as "+1 555-010-0202": verified, user.phone +15550100202, one contact', async () => {
    const a = await workspace(app);
    const created = await app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload: { name: 'Ana', contact_no: '+1 555-010-0202' } });
    expect(created.statusCode, created.body).toBe(201);
    const s = await started(a);
    await say(a, `LOGIN ${s.loginCode}`, '15550100202');
    const body = await until(
      async () => (await status(a, s.sessionId)).json(),
      (b) => Boolean(b.verificationToken),
    );
    expect((await verify(a, body.verificationToken)).json().user.phone).toBe('+15550100202');
    const contacts = await app.platform.store.db.selectFrom('contacts').select('id').where('workspace_id', '=', a.workspaceId).execute();
    expect(contacts).toHaveLength(1);
  });

  it('D4 the same LOGIN message id again after success: 200 to the provider, no second event, token or webhook', async () => {
    const a = await workspace(app);
    const s = await started(a);
    const id = await say(a, `LOGIN ${s.loginCode}`);
    const verified = await until(
      () => sessionRow(s.sessionId),
      (r) => r.status === 'success',
    );
    expect(verified.status).toBe('success');
    const second = await started(a);
    await expectNoChange(app, async () => {
      await say(a, `LOGIN ${s.loginCode}`, undefined, id);
      await say(a, `LOGIN ${second.loginCode}`, undefined, id);
    });
    expect(await sessionRow(s.sessionId)).toEqual(verified);
    expect((await sessionRow(second.sessionId)).status).toBe('pending');
  });

  it('D5 right code after expiry (clock +11 min): stays expired; status 410 expired, no token', async () => {
    const a = await workspace(app);
    const s = await started(a);
    clock += 11 * 60_000;
    await say(a, `LOGIN ${s.loginCode}`);
    expect((await sessionRow(s.sessionId)).token_jti).toBeNull();
    const res = await status(a, s.sessionId);
    expectProblem(res, 410, 'expired');
    expect(res.body).not.toContain('verificationToken');
    // The status call expires it lazily; on PostgreSQL a sweep holding the row (SKIP LOCKED) may commit it a moment later.
    const row = await until(
      () => sessionRow(s.sessionId),
      (r) => r.status === 'expired',
    );
    expect(row).toMatchObject({ status: 'expired', token_jti: null, phone: null });
  });

  it("D6 right code sent to a number other than the session's (A's other one, or B's): not verified", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const two = await insertLoginApp(app, { numbers: 2 });
    const aOther = { providerPnId: two.numbers[1]!.provider_phone_number_id, number: two.numbers[1]!.display_phone_number };
    const s = await started(a);
    const t = await started({ loginKey: two.apiKey });
    await say(b, `LOGIN ${s.loginCode}`);
    await say(aOther, `LOGIN ${t.loginCode}`);
    expect((await sessionRow(s.sessionId)).status).toBe('pending');
    expect((await sessionRow(t.sessionId)).status).toBe('pending');
    expect(await app.platform.store.db.selectFrom('login_session_events').select('id').where('session_id', 'in', [s.sessionId, t.sessionId]).execute()).toEqual(
      [],
    );
  });

  it('D7 verify-token twice with one token: valid with the user, then invalid without user data', async () => {
    const a = await workspace(app);
    const { token } = await verifiedToken(a);
    const first = await verify(a, token);
    expect(first.json()).toMatchObject({ valid: true, user: { phone: '+15550100202' } });
    expect(first.headers['cache-control']).toBe('no-store');
    expect((await verify(a, token)).json()).toEqual({ valid: false, reason: 'already_used' });
  });

  it.runIf(onPostgres)('D8 50 concurrent verify-token calls with one token (PostgreSQL): exactly one valid', async () => {
    const a = await workspace(app);
    const { token } = await verifiedToken(a);
    const verdicts = (await Promise.all(Array.from({ length: 50 }, () => verify(a, token)))).map((r) => r.json());
    expect(verdicts.filter((v) => v.valid === true)).toHaveLength(1);
    expect(verdicts.filter((v) => v.valid === false && v.reason === 'already_used')).toHaveLength(49);
  });

  it('D9 alg none; HS256 signed with the published public key: invalid', async () => {
    const a = await workspace(app);
    const { token } = await verifiedToken(a);
    const [, payload] = token.split('.');
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const jwk = JSON.stringify((await app.inject({ url: '/v1/auth/.well-known/jwks.json' })).json().keys[0]);
    const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: decodeProtectedHeader(token).kid })}.${payload}`;
    await expectAllInvalid(a, token, [
      `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      `${input}.${createHmac('sha256', jwk).update(input).digest('base64url')}`,
    ]);
  });

  it('D10 expired; future nbf; wrong iss; unknown kid; jwk/jku/x5u header: invalid, no key fetched', async () => {
    const a = await workspace(app);
    const { token } = await verifiedToken(a);
    const claims = decodeJwt(token);
    const now = Math.floor(clock / 1000);
    const ring = await app.loginSigningKeys.ring();
    const tokens = [
      await forged({ ...claims, exp: now - 1 }),
      await forged({ ...claims, nbf: now + 3600 }),
      await forged({ ...claims, iss: 'https://evil.example' }),
      await forged(claims, { kid: 'login-unknown' }),
      await forged(claims, { jku: jwksHost.url, kid: 'elsewhere' }),
      await forged(claims, { x5u: jwksHost.url, kid: 'elsewhere' }),
      await forged(claims, { jwk: ring.jwks[0], kid: undefined }),
    ];
    await expectAllInvalid(a, token, tokens);
    expect(jwksHost.received).toHaveLength(0);
  });

  it("D11 app A's token checked with app B's key (wrong aud): invalid, not consumed: A still verifies it once", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const { token } = await verifiedToken(a);
    await expectNoChange(app, async () => expect((await verify(b, token)).json()).toEqual({ valid: false, reason: expect.any(String) }));
    expect((await verify(a, token)).json().valid).toBe(true);
  });

  it('D12 a payload byte changed, signature kept; a random string: invalid; "": 400', async () => {
    const a = await workspace(app);
    const { token } = await verifiedToken(a);
    const [h, p, s] = token.split('.');
    const edited = Buffer.from(p!, 'base64url').toString().replace('+15550100202', '+15550100203');
    await expectAllInvalid(a, token, [`${h}.${Buffer.from(edited).toString('base64url')}.${s}`, 'not-a-jwt', 'a.b.c']);
    await expectNoChange(app, async () => expectProblem(await verify(a, ''), 400, 'validation'));
  });

  it('D13 start with phone_number_id and use_service_phone: true: 400 validation naming both; no session', async () => {
    const a = await workspace(app);
    const res = await expectNoChange(app, () => start(a, { phone_number_id: a.pnId, use_service_phone: true }));
    const body = expectProblem(res, 400, 'validation');
    expect(body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['/body/phone_number_id', '/body/use_service_phone']);
  });

  it("D14 start with B's phone_number_id, or an inactive one: 404 (inactive: 422 unprocessable); no session", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const two = await insertLoginApp(app, { numbers: 2 });
    const inactive = two.numbers[1]!.id;
    await app.platform.store.db.updateTable('phone_numbers').set({ status: 'DISCONNECTED' }).where('id', '=', inactive).execute();
    await expectNoChange(app, async () => {
      const foreign = expectProblem(await start(a, { phone_number_id: b.pnId }), 404, 'not-found');
      const unknown = expectProblem(await start(a, { phone_number_id: 'pn_000000000000000000' }), 404, 'not-found');
      expect(foreign.title).toBe(unknown.title);
      const body = expectProblem(await start({ loginKey: two.apiKey }, { phone_number_id: inactive }), 422, 'unprocessable');
      expect(body.errors).toEqual([{ pointer: '/body/phone_number_id', detail: expect.any(String) }]);
    });
  });

  it('D15 start with the plan session cap reached: 402 plan-limit naming the cap and the upgrade path; no session', async () => {
    const capped = await insertLoginApp(app, { cap: 1 });
    const w = { loginKey: capped.apiKey };
    await started(w);
    const res = await expectNoChange(app, () => start(w));
    const body = expectProblem(res, 402, 'plan-limit');
    expect(body.detail).toMatch(/1 login session/);
    expect(body.upgrade_url).toMatch(/upgrade=login-sessions$/);
  });

  it("D16 status of an unknown session or another app's: 404", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const s = await started(a);
    await expectNoChange(app, async () => {
      const foreign = expectProblem(await status(b, s.sessionId), 404, 'not-found');
      const unknown = expectProblem(await status(a, 'ls_0000000000000000'), 404, 'not-found');
      // Same body as an unknown id, but for the id it names.
      expect(foreign.detail.replace(s.sessionId, '<id>')).toBe(unknown.detail.replace('ls_0000000000000000', '<id>'));
    });
  });

  // bad-inputs D17–D21: the text as phones send it. After NFKC, format characters (Cf) are dropped and every
  // Unicode space is a space; letters of other scripts are never read as Latin ones.
  it('D17 zero-width space, ZWNJ, ZWJ and word joiner inside the keyword or around the code: verified', async () => {
    const a = await workspace(app);
    await verifiedBy(a, (code) => `LO\u200BGIN ${code}`);
    await verifiedBy(a, (code) => `L\u200CO\u200DG\u2060IN ${code}`);
    await verifiedBy(a, (code) => `LOGIN \u200B${code}\u2060`);
  });

  it('D18 a BOM (U+FEFF) at the start, and bidi marks around the text: verified', async () => {
    const a = await workspace(app);
    await verifiedBy(a, (code) => `\uFEFFLOGIN ${code}`);
    await verifiedBy(a, (code) => `\u200FLOGIN ${code}\u200E`);
  });

  it('D19 a soft hyphen (U+00AD) inside the code or the keyword: verified', async () => {
    const a = await workspace(app);
    await verifiedBy(a, (code) => `LOGIN ${code.slice(0, 4)}\u00AD${code.slice(4)}`);
    await verifiedBy(a, (code) => `LOG\u00ADIN ${code}`);
  });

  it('D20 NBSP, ideographic space, thin space, ogham space, tab and line separator between keyword and code: verified', async () => {
    const a = await workspace(app);
    for (const space of ['\u00A0', '\u3000', '\u2009', '\u202F', '\u1680', '\t', '\u2028']) {
      await verifiedBy(a, (code) => `LOGIN${space}${code}`);
    }
  });

  it('D21 look-alike letters of other scripts (Cyrillic О/Е/К, Greek Ο/Ν) in the keyword or the code: never verified', async () => {
    const a = await workspace(app);
    const s = await started(a);
    // A code with a letter that has a look-alike, so that the code itself can be imitated.
    const code = `K${s.loginCode.slice(1, 7)}E`;
    await app.platform.store.db.updateTable('login_sessions').set({ login_code: code }).where('id', '=', s.sessionId).execute();
    await say(a, 'hello'); // the contact and chat exist first
    const before = await sessionRow(s.sessionId);
    const texts = [
      `L\u041EGIN ${code}`, // Cyrillic О
      `L\u039FGIN ${code}`, // Greek Ο
      `LOG\u0406N ${code}`, // Cyrillic І
      `LOGIN ${code.replace(/./g, (c) => LOOK_ALIKES[c] ?? c)}`, // every imitable character of the code
      `LOGIN \u041A${code.slice(1)}`, // Cyrillic К only
      `LOGIN ${code.slice(0, 7)}\u0415`, // Cyrillic Е only
      `LOGIN ${code.slice(0, 7)}\u0395`, // Greek Ε only
    ];
    await expectNoChange(
      app,
      async () => {
        for (const text of texts) await say(a, text);
      },
      { ignore: INBOUND_ROWS },
    );
    expect(await sessionRow(s.sessionId)).toEqual(before);
    // The control: the same session, written in Latin letters, verifies.
    await say(a, `LOGIN ${code}`);
    expect(
      (
        await until(
          () => sessionRow(s.sessionId),
          (r) => r.status === 'success',
        )
      ).status,
    ).toBe('success');
  });
  // Phone-bound sessions and codes sent to the user (issue 30; the full behaviour in
  // test/unit/login/codes.test.ts): each bad input changes nothing it should not.
  const post = (w: { loginKey: string }, url: string, body?: object) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'x-api-key': w.loginKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      payload: body ? JSON.stringify(body) : undefined,
    });
  const USER = '+5511987654321';
  /** The code the workspace's number sent to USER last (the sandbox keeps it readable for the simulated phone). */
  const lastCode = async (w: Workspace) => {
    const row = await app.platform.store.db
      .selectFrom('messages')
      .select('content')
      .where('workspace_id', '=', w.workspaceId)
      .where('direction', '=', 'outbound')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    const content = (typeof row.content === 'string' ? JSON.parse(row.content) : row.content) as { text: string };
    return content.text.slice(0, 6);
  };

  it('D22 start with a malformed phone, or mode code without phone: 400 naming /body/phone; no session, no message', async () => {
    const a = await workspace(app);
    await expectNoChange(app, async () => {
      for (const body of [{ phone: '12' }, { phone: '+1 (555) 0' }, { phone: 'ana@example.com' }, { mode: 'code' }, { phone: '', mode: 'code' }]) {
        const res = await start(a, body);
        expect(expectProblem(res, 400, 'validation').errors[0].pointer, JSON.stringify(body)).toBe('/body/phone');
      }
    });
  });

  it("D23 a phone-bound session's right code from another number: ignored and counted, no event, no token", async () => {
    const a = await workspace(app);
    const res = await start(a, { phone: USER });
    const s = res.json();
    await say(a, 'hello', '15550100202'); // the contact and chat exist first
    await say(a, `LOGIN ${s.loginCode}`, '15550100202');
    const row = await sessionRow(s.sessionId);
    expect(row).toMatchObject({ status: 'pending', ignored_logins: 1, token_jti: null, phone: null });
    expect(await app.platform.store.db.selectFrom('login_session_events').select('id').where('session_id', '=', s.sessionId).execute()).toEqual([]);
    expect((await status(a, s.sessionId)).json()).toMatchObject({ status: 'pending', ignoredLogins: 1, boundPhone: USER });
  });

  it('D24 wrong code ×5: 422 each with the attempts left, then locked: 409 even for the right code; no token', async () => {
    const a = await workspace(app);
    const s = (await start(a, { phone: USER, mode: 'code' })).json();
    const code = await lastCode(a);
    const wrong = code === '111111' ? '222222' : '111111';
    for (let i = 0; i < 5; i++) expectProblem(await post(a, `/v1/auth/chatapp/check/${s.sessionId}`, { code: wrong }), 422, 'unprocessable');
    await expectNoChange(app, async () => {
      expectProblem(await post(a, `/v1/auth/chatapp/check/${s.sessionId}`, { code }), 409, 'conflict');
      expectProblem(await post(a, `/v1/auth/chatapp/resend/${s.sessionId}`), 409, 'conflict');
    });
    expect(await sessionRow(s.sessionId)).toMatchObject({ status: 'pending', code_attempts: 5, token_jti: null });
  });

  it('D25 the right code after expiry: 410 expired, no token', async () => {
    const a = await workspace(app);
    const s = (await start(a, { phone: USER, mode: 'code' })).json();
    const code = await lastCode(a);
    clock = Date.parse(s.expiresAt) + 1000;
    expectProblem(await post(a, `/v1/auth/chatapp/check/${s.sessionId}`, { code }), 410, 'expired');
    expect(await sessionRow(s.sessionId)).toMatchObject({ status: 'expired', token_jti: null });
  });

  it('D26 resend within the cool-down: 429 rate-limited with Retry-After; nothing sent, nothing changed', async () => {
    const a = await workspace(app);
    const s = (await start(a, { phone: USER, mode: 'code' })).json();
    await expectNoChange(app, async () => {
      const res = await post(a, `/v1/auth/chatapp/resend/${s.sessionId}`);
      expectProblem(res, 429, 'rate-limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    });
  });

  it("D27 a malformed code: 400, no attempt counted; check or resend of another app's session: 404", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const s = (await start(a, { phone: USER, mode: 'code' })).json();
    const code = await lastCode(a);
    await expectNoChange(app, async () => {
      for (const bad of ['12345', 'l23456', '１２３４５６', `${code}\n`])
        expectProblem(await post(a, `/v1/auth/chatapp/check/${s.sessionId}`, { code: bad }), 400, 'validation');
      expectProblem(await post(b, `/v1/auth/chatapp/check/${s.sessionId}`, { code }), 404, 'not-found');
      expectProblem(await post(b, `/v1/auth/chatapp/resend/${s.sessionId}`), 404, 'not-found');
    });
    expect((await sessionRow(s.sessionId)).code_attempts).toBe(0);
  });
});
