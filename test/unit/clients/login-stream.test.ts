// The login helpers against a listening server and real sessions completed through the sandbox
// phone: watchLoginSession (verified, a dropped connection reconnected, resume with Last-Event-ID,
// 204, expired, refused), pollLoginSession (every 2 s, success, 410) and waitForLogin (stream,
// then status; polling when the stream cannot connect).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import {
  createLoginClient,
  LoginSessionExpiredError,
  LoginStreamError,
  pollLoginSession,
  unwrap,
  waitForLogin,
  watchLoginSession,
  type LoginClient,
} from '../../../clients/index.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { eventually } from '#test/support/eventually.js';
import { serve, type Served } from './support.js';

let s: Served;
let f: Awaited<ReturnType<typeof insertLoginApp>>;
let login: LoginClient;
/** Every request the Login client sends, and the URLs of those answered. */
const sent: Request[] = [];
const answered: string[] = [];

beforeAll(async () => {
  s = await serve();
  f = await insertLoginApp(s.app);
  login = createLoginClient({
    baseUrl: s.baseUrl,
    auth: { apiKey: f.apiKey },
    fetch: async (r) => {
      sent.push(r);
      const res = await fetch(r);
      answered.push(r.url);
      return res;
    },
  });
});

async function start() {
  return unwrap(await login.POST('/v1/auth/chatapp/start', { body: {} }));
}
const message = (loginCode: string) =>
  sendFromSandboxPhone(s.app, { phoneNumberId: f.numbers[0]!.id, from: '+15550100202', name: 'Ana', text: `LOGIN ${loginCode}` });
/**
 * Resolves when the next event stream opened in this process has its 200 answer: the server
 * then watches the session, so what happens next reaches the stream live.
 */
function streamOpen(): Promise<void> {
  const original = globalThis.fetch;
  return new Promise((resolve) => {
    globalThis.fetch = async (input, init) => {
      const res = await original(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (url.includes('/events/') && res.ok) {
        globalThis.fetch = original;
        resolve();
      }
      return res;
    };
  });
}
/** Resolves once the Login client has had an answer to a status call. */
const statusAnswered = () => eventually(() => answered.some((url) => url.includes('/status/')), { within: 5_000, what: 'a status answer' });
/** A fetch for EventSource that records each request's Last-Event-ID. */
function recording(lastIds: (string | null)[], wrap?: (res: Response, n: number) => Response): typeof fetch {
  return async (input, init) => {
    lastIds.push(new Headers(init?.headers).get('last-event-id'));
    const res = await fetch(input, init);
    return wrap ? wrap(res, lastIds.length) : res;
  };
}

describe('watchLoginSession', () => {
  it('resolves with verified (its event id) once the LOGIN message arrives', async () => {
    const session = await start();
    const open = streamOpen();
    const watching = watchLoginSession({ baseUrl: s.baseUrl, sessionId: session.sessionId, subscribeToken: session.subscribeToken });
    await open;
    await message(session.loginCode);
    const event = await watching;
    expect(event).toMatchObject({ event: 'verified', sessionId: session.sessionId });
    expect(event.eventId).toMatch(/^\d+$/);
  });

  it('a connection dropped before the event: EventSource reconnects (after retry: 2000) and the event stored meanwhile arrives', async () => {
    const session = await start();
    const lastIds: (string | null)[] = [];
    // The first response's body ends after its first chunk (`retry: 2000`), as a dropped connection would.
    const cut = (res: Response, n: number) => {
      if (n > 1) return res;
      const reader = res.body!.getReader();
      const body = new ReadableStream({
        async pull(controller) {
          const { value } = await reader.read();
          if (value) controller.enqueue(value);
          await reader.cancel();
          controller.close();
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const open = streamOpen();
    const watching = watchLoginSession({
      baseUrl: s.baseUrl,
      sessionId: session.sessionId,
      subscribeToken: session.subscribeToken,
      fetch: recording(lastIds, cut),
    });
    await open;
    await message(session.loginCode); // while disconnected
    const event = await watching;
    expect(event.event).toBe('verified');
    expect(lastIds).toEqual([null, null]); // two connections; no event had an id before the final one
  });

  it('resume with Last-Event-ID: the final id answers 204 (LoginStreamError 204); an older id replays the event', async () => {
    const session = await start();
    const open = streamOpen();
    const watching = watchLoginSession({ baseUrl: s.baseUrl, sessionId: session.sessionId, subscribeToken: session.subscribeToken });
    await open;
    await message(session.loginCode);
    const { eventId } = await watching;
    const lastIds: (string | null)[] = [];
    const done = await watchLoginSession({
      baseUrl: s.baseUrl,
      sessionId: session.sessionId,
      subscribeToken: session.subscribeToken,
      lastEventId: eventId,
      fetch: recording(lastIds),
    }).catch((e: unknown) => e);
    expect(done).toBeInstanceOf(LoginStreamError);
    expect((done as LoginStreamError).status).toBe(204);
    expect(lastIds).toEqual([eventId]);
    const older = String(BigInt(eventId) - 1n);
    const replay = await watchLoginSession({
      baseUrl: s.baseUrl,
      sessionId: session.sessionId,
      subscribeToken: session.subscribeToken,
      lastEventId: older,
      fetch: recording(lastIds),
    });
    expect(replay).toEqual({ event: 'verified', sessionId: session.sessionId, eventId });
    expect(lastIds).toEqual([eventId, older]);
  });

  it('expired: rejects with LoginSessionExpiredError when the session times out', async () => {
    const session = await start();
    const open = streamOpen();
    const watching = watchLoginSession({ baseUrl: s.baseUrl, sessionId: session.sessionId, subscribeToken: session.subscribeToken }).catch((e: unknown) => e);
    await open;
    s.clock.advance(11 * 60_000); // the sweep (every half second here, ./support.ts) expires it and pushes `expired`
    expect(await watching).toBeInstanceOf(LoginSessionExpiredError);
  });

  it('a wrong subscribe token: LoginStreamError 401, no retrying', async () => {
    const session = await start();
    const error = await watchLoginSession({ baseUrl: s.baseUrl, sessionId: session.sessionId, subscribeToken: `${session.subscribeToken}x` }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LoginStreamError);
    expect((error as LoginStreamError).status).toBe(401);
  });

  it('an abort rejects at once and closes the stream', async () => {
    const session = await start();
    const abort = new AbortController();
    const open = streamOpen();
    const watching = watchLoginSession({
      baseUrl: s.baseUrl,
      sessionId: session.sessionId,
      subscribeToken: session.subscribeToken,
      signal: abort.signal,
    }).catch((e: unknown) => e);
    await open;
    abort.abort(new Error('left the page'));
    expect(await watching).toMatchObject({ message: 'left the page' });
  });
});

describe('pollLoginSession', () => {
  it('asks every 2 s: pending, then success with the verification token', async () => {
    const session = await start();
    sent.length = 0;
    answered.length = 0;
    const started = Date.now();
    const polling = pollLoginSession(login, session.sessionId);
    await statusAnswered();
    await message(session.loginCode);
    const status = await polling;
    expect(status.status).toBe('success');
    expect(status.verificationToken).toMatch(/^eyJ/);
    const statusCalls = sent.filter((r) => r.url.includes('/status/'));
    expect(statusCalls).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  });

  it('410: rejects with LoginSessionExpiredError', async () => {
    const session = await start();
    s.clock.advance(11 * 60_000);
    await expect(pollLoginSession(login, session.sessionId, { intervalMs: 2000 })).rejects.toBeInstanceOf(LoginSessionExpiredError);
  });
});

describe('waitForLogin', () => {
  it('uses the stream, then one status call for the token', async () => {
    const session = await start();
    sent.length = 0;
    const open = streamOpen();
    const waiting = waitForLogin({ client: login, baseUrl: s.baseUrl, sessionId: session.sessionId, subscribeToken: session.subscribeToken });
    await open;
    await message(session.loginCode);
    const status = await waiting;
    expect(status).toMatchObject({ status: 'success', sessionId: session.sessionId });
    expect(status.verificationToken).toBeTruthy();
    expect(sent.filter((r) => r.url.includes('/status/'))).toHaveLength(1);
  });

  it('falls back to polling when the stream cannot connect (nothing listens at its URL)', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const session = await start();
    sent.length = 0;
    answered.length = 0;
    const waiting = waitForLogin({ client: login, baseUrl: deadUrl, sessionId: session.sessionId, subscribeToken: session.subscribeToken, intervalMs: 2000 });
    await statusAnswered();
    await message(session.loginCode);
    const status = await waiting;
    expect(status.status).toBe('success');
    expect(sent.filter((r) => r.url.includes('/status/')).length).toBeGreaterThanOrEqual(1);
  });
});
