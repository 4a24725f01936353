// The login session event stream (SSE) against a listening server, with the `eventsource`
// library as a browser would use it: `verified` and `expired`, the close after the final event
// and the 204 that stops EventSource, Last-Event-ID replay, the frames and headers, bad-inputs D1 (no stream
// for a bad token), the per-session cap (bad-inputs K6), 1,000 open/close cycles without a leak (bad-inputs F-13), the
// push across two instances on one database (bad-inputs F-11), and streams ended at shutdown (bad-inputs F-14).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { EventSource } from 'eventsource';
import { build, buildShared } from '#test/helper.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { openStore, type Store } from '#server/store/db.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { STREAMS_PER_SESSION } from '#server/apis/login/events-stream.js';
import { elapse, eventually } from '#test/support/eventually.js';

let clock = Date.parse('2026-11-23T09:30:00Z');
const now = () => new Date(clock);
let app: FastifyInstance;
let base: string;
// 1,000 cycles from one address would trip the per-IP limit (120 a minute) meant for other things.
// Instances on one database share SECRET_KEY (subscribe tokens are stored as keyed digests).
// A jump of the injected clock wakes no timer: the expiry sweep finds it at its idle re-check.
const env = { RATE_LIMIT_IP_PER_MINUTE: '1000000', SECRET_KEY: 'login-stream-test-secret-key-0123456789', WORKER_IDLE_MS: '500' };

beforeAll(async () => {
  app = await buildShared({ env, overrides: { now } });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});

async function fixture(on: FastifyInstance = app) {
  const { apiKey, numbers } = await insertLoginApp(on);
  const res = await on.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': apiKey } });
  expect(res.statusCode, res.body).toBe(201);
  const s = res.json() as { sessionId: string; loginCode: string; subscribeToken: string };
  return {
    ...s,
    pn: numbers[0]!,
    url: (token = s.subscribeToken, id = s.sessionId) => `${base}/v1/auth/chatapp/events/${id}?token=${encodeURIComponent(token)}`,
  };
}
type Fixture = Awaited<ReturnType<typeof fixture>>;

const login = (f: Fixture, on: FastifyInstance = app) =>
  sendFromSandboxPhone(on, { phoneNumberId: f.pn.id, from: '+15550100202', name: 'Ana', text: `LOGIN ${f.loginCode}` });
const frame = (id: string, event: string, sessionId: string) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify({ event, sessionId })}\n\n`;
const until = (ok: () => boolean | Promise<boolean>, ms = 5000) => eventually(ok, { within: ms, every: 10 }).catch(() => {});

/** A raw stream reader: the text so far, and ways to wait for more. */
async function open(url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  let text = '';
  let wake = () => {};
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body ?? []) {
        text += decoder.decode(chunk as Uint8Array, { stream: true });
        wake();
      }
    } catch {
      // aborted
    }
    wake();
  })();
  return {
    res,
    /** Resolves once `part` has arrived (or the stream ended, or 5 s passed). */
    waitFor: async (part: string) => {
      const end = Date.now() + 5000;
      while (!text.includes(part) && Date.now() < end)
        await Promise.race([new Promise<void>((r) => (wake = r)), reading, elapse(100, 'the deadline is checked at least this often')]);
      return text;
    },
    done: () => reading.then(() => text),
    close: () => abort.abort(),
  };
}

describe('event stream', () => {
  it('EventSource receives verified, the stream closes, and the reconnect with Last-Event-ID gets 204 and stops', async () => {
    const f = await fixture();
    const requests: (string | null)[] = [];
    const es = new EventSource(f.url(), {
      fetch: (input, init) => {
        requests.push(new Headers(init?.headers).get('last-event-id'));
        return fetch(input, init);
      },
    });
    const errors: (number | undefined)[] = [];
    es.addEventListener('error', (e) => errors.push((e as { code?: number }).code));
    await new Promise((r) => es.addEventListener('open', r, { once: true }));
    const received = new Promise<MessageEvent>((r) => es.addEventListener('verified', r, { once: true }));
    await login(f);
    const event = await received;
    expect(JSON.parse(event.data)).toEqual({ event: 'verified', sessionId: f.sessionId });
    expect(event.lastEventId).toMatch(/^\d+$/);
    await until(() => es.readyState === EventSource.CLOSED, 6000); // retry: 2000, then the 204
    expect(es.readyState).toBe(EventSource.CLOSED);
    expect(requests).toEqual([null, event.lastEventId]);
    expect(errors).toContain(204);
    es.close();
  });

  it('EventSource receives expired when the session times out (injected clock, swept within a second)', async () => {
    const f = await fixture();
    const es = new EventSource(f.url());
    await new Promise((r) => es.addEventListener('open', r, { once: true }));
    const received = new Promise<MessageEvent>((r) => es.addEventListener('expired', r, { once: true }));
    clock += 10 * 60_000;
    const event = await received;
    expect(JSON.parse(event.data)).toEqual({ event: 'expired', sessionId: f.sessionId });
    es.close();
  });

  it('frames and headers: retry first, no-store/no-transform, X-Accel-Buffering, heartbeat comment, one final event, then closed', async () => {
    const f = await fixture();
    const s = await open(f.url());
    expect(s.res.status).toBe(200);
    expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(s.res.headers.get('cache-control')).toBe('no-store, no-transform');
    expect(s.res.headers.get('x-accel-buffering')).toBe('no');
    expect(s.res.headers.get('connection')).toBe('keep-alive');
    await s.waitFor('retry: 2000\n\n');
    app.loginStreams.heartbeat(); // the 15 s timer calls this
    await s.waitFor(': heartbeat\n\n');
    await login(f);
    const text = await s.done();
    const [event] = await app.platform.store.db.selectFrom('login_session_events').select('id').where('session_id', '=', f.sessionId).execute();
    expect(text).toBe(`retry: 2000\n\n: heartbeat\n\n${frame(String(event!.id), 'verified', f.sessionId)}`);
  });

  it('F-13 client gone while verified fires; back without an event id it gets the event once; Last-Event-ID of it answers 204, an older one replays', async () => {
    const f = await fixture();
    const gone = await open(f.url());
    await gone.waitFor('retry');
    gone.close();
    await until(() => app.loginStreams.count(f.sessionId) === 0);
    await login(f);
    await until(
      async () => (await app.platform.store.db.selectFrom('login_session_events').select('id').where('session_id', '=', f.sessionId).execute()).length === 1,
    );
    const [event] = await app.platform.store.db.selectFrom('login_session_events').select('id').where('session_id', '=', f.sessionId).execute();
    const id = String(event!.id);
    const back = await open(f.url());
    expect(await back.done()).toBe(`retry: 2000\n\n${frame(id, 'verified', f.sessionId)}`);
    const older = await open(f.url(), { 'last-event-id': String(Number(id) - 1) });
    expect(await older.done()).toBe(`retry: 2000\n\n${frame(id, 'verified', f.sessionId)}`);
    const same = await open(f.url(), { 'last-event-id': id });
    expect(same.res.status).toBe(204);
    expect(await same.done()).toBe('');
  });

  it("D1 a random token or none: 401 without a stream; an unknown session, or another workspace's token, 404 (B1)", async () => {
    const [f, g] = [await fixture(), await fixture()];
    const foreign = await fetch(f.url(g.subscribeToken)); // g is another workspace's session
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(await foreign.json())).not.toContain(g.subscribeToken);
    for (const url of [f.url(`st_${'x'.repeat(40)}`), `${base}/v1/auth/chatapp/events/${f.sessionId}`, f.url(f.subscribeToken.slice(0, -1))]) {
      const res = await fetch(url);
      expect(res.status, url).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toBe('SubscribeToken realm="login"');
      const body = await res.json();
      expect(body.type).toBe('https://chatapp.example/problems/unauthorized');
      expect(JSON.stringify(body)).not.toContain(g.subscribeToken);
    }
    const unknown = await fetch(f.url(f.subscribeToken, 'ls_0000000000000000'));
    expect(unknown.status).toBe(404);
    expect(app.loginStreams.count(f.sessionId)).toBe(0);
  });

  it(`K6 at most ${STREAMS_PER_SESSION} streams per session: the next one 429; closing one frees its slot`, async () => {
    const f = await fixture();
    const streams = [];
    for (let i = 0; i < STREAMS_PER_SESSION; i++) streams.push(await open(f.url()));
    const over = await fetch(f.url());
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('5');
    streams.pop()!.close();
    await until(() => app.loginStreams.count(f.sessionId) < STREAMS_PER_SESSION);
    const again = await open(f.url());
    expect(again.res.status).toBe(200);
    for (const s of [...streams, again]) s.close();
  });

  it('F-13 1,000 open/close cycles leave no stream, listener or timer behind', async () => {
    const f = await fixture();
    const hub = app.loginStreams;
    const subscribers = (app.platform.bus as unknown as { subscribers: Map<string, Set<unknown>> }).subscribers;
    const before = { bus: subscribers.get('login.session')?.size, sockets: await connections() };
    for (let i = 0; i < 1000; i++) {
      const s = await open(f.url());
      await s.waitFor('retry');
      s.close();
    }
    await until(() => hub.count() === 0);
    expect(hub.count()).toBe(0);
    expect(subscribers.get('login.session')?.size).toBe(before.bus);
    await until(async () => (await connections()) <= before.sockets);
    expect(await connections()).toBeLessThanOrEqual(before.sockets);
  }, 180_000); // a hang bound: 1,000 cycles take seconds alone, minutes on a busy machine
});

function connections(): Promise<number> {
  return new Promise((resolve, reject) => app.server.getConnections((error, n) => (error ? reject(error) : resolve(n))));
}

describe('across instances and at shutdown', () => {
  let second: FastifyInstance;
  let secondStore: Store | undefined;
  beforeAll(async () => {
    // A second instance on the same database: on PostgreSQL its own connections (LISTEN included),
    // on PGlite the same in-process database.
    const url = (app.platform.store as Store & { url?: string }).url;
    secondStore = url ? await openStore({ databaseUrl: url }) : undefined;
    second = await buildShared({ env, overrides: { now, store: secondStore ?? app.platform.store } });
  });
  afterAll(async () => {
    await second.close();
    await secondStore?.close();
  });

  it('F-11 the stream on one instance gets verified when the message arrives at the other', async () => {
    const f = await fixture();
    const secondBase = await second.listen({ port: 0, host: '127.0.0.1' });
    const s = await open(f.url().replace(base, secondBase));
    await s.waitFor('retry');
    await login(f, app);
    expect(await s.done()).toMatch(/event: verified\n/);
  });

  it('F-14 closing the app ends open streams with retry (close does not wait for them)', async () => {
    const closing = await build({ env, overrides: { now } });
    const closingBase = await closing.listen({ port: 0, host: '127.0.0.1' });
    const f = await fixture(closing);
    const s = await open(f.url().replace(base, closingBase));
    await s.waitFor('retry');
    const t0 = Date.now();
    await closing.close();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await s.done()).toBe('retry: 2000\n\nretry: 2000\n\n');
  });
});
