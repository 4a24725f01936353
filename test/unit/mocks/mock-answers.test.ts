// What a frontend developer gets from the mocks (mocks/front.mjs in front of Prism) for calls the
// server answers: a contract-breaking send answers the server's 400 `validation` naming the
// fields; a stray Authorization on public sign-up is ignored as the server ignores it; a send's
// default answer is of the body's kind; timestamps that say "until" lie far in the future, so
// that a client checking them sees a live session or token; the stream's default example is the
// one that succeeds; the owner's token is an HS256 JWT, as the server's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMocks } from '../../../mocks/mocks.mjs';
import { freePort } from '#test/support/free-port.js';

let mocks: { urls: Record<string, string>; stop: () => Promise<unknown> };
beforeAll(async () => {
  mocks = await startMocks({ ports: { account: await freePort(), login: await freePort(), messaging: await freePort() } });
}, 120_000);
afterAll(() => mocks?.stop());

const json = { 'content-type': 'application/json' };
const post = (api: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${mocks.urls[api]}${path}`, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body) });
const decode = (segment: string) => JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
const inTheFuture = (value: string | number) =>
  expect(typeof value === 'number' ? value * 1000 : Date.parse(value)).toBeGreaterThan(Date.now() + 365 * 86_400_000);

describe('the mocks answer as the server does', () => {
  it('a send that breaks the contract: 400 validation naming the missing and the unknown field', async () => {
    const res = await post(
      'messaging',
      '/api/chatapp/send',
      { contact_no: '+4915112345678', messageType: 'text', message: 'hi', colour: 'red' },
      { 'x-api-key': 'mk_test' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      type: 'https://chatapp.example/problems/validation',
      status: 400,
      errors: [
        { pointer: '/body/chatapp_phone_number', detail: 'is required' },
        { pointer: '/body/colour', detail: 'is not a known field' },
      ],
    });
  });

  it("a send's default answer is of the body's kind", async () => {
    for (const [messageType, extra] of [
      ['text', { message: 'Hi Lena' }],
      ['location', { location: { latitude: 52.52, longitude: 13.405 } }],
    ] as const) {
      const res = await post(
        'messaging',
        '/api/chatapp/send',
        { contact_no: '+4915112345678', chatapp_phone_number: '+14155550100', messageType, ...extra },
        { 'x-api-key': 'mk_test' },
      );
      expect(res.status, messageType).toBe(201);
      expect((await res.json()).messageType).toBe(messageType);
    }
  });

  it('a stray Authorization header on public sign-up and sign-in is ignored, as by the server', async () => {
    const signUp = { email: 'ana@acme.example', password: 'correct horse battery staple', name: 'Ana', workspace_name: 'Acme', workspace_slug: 'acme' };
    const res = await post('account', '/api/account/workspaces', signUp, { authorization: 'Bearer left-over-token' });
    expect(res.status).toBe(201);
    const bad = await post('account', '/api/account/workspaces', { ...signUp, email: undefined }, { authorization: 'Bearer left-over-token' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).errors).toEqual([{ pointer: '/body/email', detail: 'is required' }]);
    const session = await post('account', '/api/account/sessions', { email: signUp.email, password: signUp.password }, { authorization: 'Basic eDp5' });
    expect(session.status).toBe(201);
  });

  it("the owner's session: an HS256 JWT (the server's algorithm) whose exp and expires_at lie in the future", async () => {
    const res = await post('account', '/api/account/sessions', { email: 'ana@acme.example', password: 'correct horse battery staple' });
    const session = await res.json();
    const [header, payload] = session.access_token.split('.');
    expect(decode(header)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = decode(payload);
    expect(claims).toMatchObject({ aud: 'owner-api', sub: expect.stringMatching(/^usr_/), ws: expect.stringMatching(/^ws_/) });
    inTheFuture(claims.exp);
    inTheFuture(session.expires_at);
    expect(Date.parse(session.expires_at) / 1000).toBe(claims.exp);
  });

  it("a Login session's expiresAt and its verification token's exp lie in the future; the stream's default is verified", async () => {
    const started = await post('login', '/v1/auth/chatapp/start', {}, { 'x-api-key': 'lk_live_test' });
    expect(started.status).toBe(201);
    const session = await started.json();
    inTheFuture(session.expiresAt);
    const status = await fetch(`${mocks.urls.login}/v1/auth/chatapp/status/${session.sessionId}`, {
      headers: { 'x-api-key': 'lk_live_test', prefer: 'example=success' },
    });
    const verified = await status.json();
    expect(verified.status).toBe('success');
    inTheFuture(verified.expiresAt);
    inTheFuture(verified.verificationTokenExpiresAt);
    inTheFuture(decode(verified.verificationToken.split('.')[1]).exp);
    const stream = await fetch(`${mocks.urls.login}/v1/auth/chatapp/events/${session.sessionId}?token=${session.subscribeToken}`, {
      headers: { accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    expect(await stream.text()).toMatch(/event: verified/);
  });
});
