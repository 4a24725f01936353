// Catalogue group F (outbound webhooks) end to end: the fixture's Connect bearer registers
// endpoints at local receivers, the outbox is driven by hand (its worker is stopped, so what a
// test sees is what it caused), and receivers check signatures with our users' tools: Stripe's
// Node SDK, a plain HMAC, and our client helpers (clients/webhooks.ts).
// bad-inputs F7's "memory flat" is measured on the fetch itself in test/unit/safe-fetch.test.ts; here the
// delivery log keeps a few KB of a 50 MB answer.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll, describe, expect, it } from 'vitest';
import { connectBearer } from '../support/connect.js';
import { startReceiver } from '../support/receiver.js';
import { insertLoginApp } from '../support/login-app.js';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { verifyConnectWebhook, verifyLoginWebhook, WebhookSignatureError } from '../../clients/index.js';
import { build } from '../helper.js';
import { appWithClock, movableClock, pump, settled } from '../unit/webhooks/support.js';
import { expectNoChange, workspace, type Workspace } from './support.js';
import { inbound, postInbound, textMessage } from './inbound.js';

const BASE = '/api/connect/webhook-endpoints';
const stripe = new Stripe('sk_test_x');
// The delivery timeout shortened from 10 s: bad-inputs F5 waits it out.
const DELIVERY_TIMEOUT_MS = 3_000;
const { app, clock } = await appWithClock({
  env: { RATE_LIMIT_IP_PER_MINUTE: '100000', RATE_LIMIT_PER_MINUTE: '100000' },
  overrides: { timeouts: { webhookMs: DELIVERY_TIMEOUT_MS } },
});
await app.platform.outbox.stop();
const open: { close: () => unknown }[] = [];
afterAll(async () => {
  for (const s of open) await s.close();
});

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(answer);
  open.push(r);
  return r;
}

/** A plain HTTP server answering with `handler`, closed after the file. */
async function server(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const s: Server = createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  open.push({ close: () => (s.closeAllConnections(), new Promise((r) => s.close(r))) });
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`;
}

async function endpoint(w: Workspace, url: string, events = ['*']) {
  const res = await app.inject({ method: 'POST', url: BASE, headers: { authorization: w.connect }, payload: { url, enabled_events: events } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; secret: string };
}
const sendTest = async (w: Workspace, id: string) => {
  const res = await app.inject({ method: 'POST', url: `${BASE}/${id}/test`, headers: { authorization: w.connect } });
  expect(res.statusCode, res.body).toBe(202);
  return res.json() as { id: string; event_id: string };
};
const delivery = async (w: Workspace, id: string, dlv: string) =>
  (await app.inject({ url: `${BASE}/${id}/deliveries/${dlv}`, headers: { authorization: w.connect } })).json();
const signature = (r: { headers: Record<string, unknown> }) => String(r.headers['x-connect-signature']);
const tOf = (header: string) => Number(/t=(\d+)/.exec(header)![1]);

describe('F. Outbound webhooks', () => {
  it('F1 a real link.opened: Stripe constructEvent(raw, header, secret, 300) and a plain HMAC-SHA256 of t.raw both verify', async () => {
    const a = await workspace(app);
    const r = await receiver();
    const e = await endpoint(a, r.url, ['link.opened']);
    const data = { external_id: 'crm-1', recipient: { phone: '+4915112345678' } };
    const eventId = await app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId: a.workspaceId, api: 'connect', type: 'link.opened', data }));
    await pump(app, () => r.received.length === 1, 'link.opened');
    const got = r.received[0]!;
    const header = signature(got);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(stripe.webhooks.constructEvent(got.body, header, e.secret, 300)).toMatchObject({ id: eventId, type: 'link.opened', data });
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
    expect(createHmac('sha256', e.secret).update(`${t}.${got.body}`).digest('hex')).toBe(v1);
  });

  it('F2 a chatapp.auth.verified delivery: X-Login-Signature sha256=<hex HMAC of the raw body> verifies', async () => {
    const r = await receiver();
    const login = await insertLoginApp(app, { webhookUrl: r.url });
    const pn = login.numbers[0]!;
    const started = (await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': login.apiKey } })).json();
    await postInbound(
      app,
      inbound({ providerPnId: pn.provider_phone_number_id, number: pn.display_phone_number }, [textMessage('wamid.F2', `LOGIN ${started.loginCode}`)]),
    );
    await pump(app, () => r.received.length === 1, 'chatapp.auth.verified');
    const got = r.received[0]!;
    const header = String(got.headers['x-login-signature']);
    expect(header).toBe(`sha256=${createHmac('sha256', login.webhookSecret).update(got.body).digest('hex')}`);
    expect(verifyLoginWebhook(got.body, header, login.webhookSecret)).toMatchObject({ type: 'chatapp.auth.verified' });
    expect(() => verifyLoginWebhook(`${got.body} `, header, login.webhookSecret)).toThrow(WebhookSignatureError);
  });

  it('F3 our client helpers given t 301 s off, no v1, a malformed header, a wrong digest: each refused; inside tolerance accepted', async () => {
    const a = await workspace(app);
    const r = await receiver();
    const e = await endpoint(a, r.url);
    await sendTest(a, e.id);
    await pump(app, () => r.received.length === 1, 'the test event');
    const { body } = r.received[0]!;
    const header = signature(r.received[0]!);
    const t = tOf(header);
    const v1 = /v1=([0-9a-f]{64})/.exec(header)![1]!;
    const refused: [string, string, number][] = [
      [header, 'timestamp_out_of_tolerance', t + 301],
      [header, 'timestamp_out_of_tolerance', t - 301],
      [`t=${t}`, 'malformed_header', t],
      [`v1=${v1}`, 'malformed_header', t],
      ['garbage', 'malformed_header', t],
      [`t=${t},v1=${'0'.repeat(64)}`, 'no_matching_signature', t],
      [`t=${t + 1},v1=${v1}`, 'no_matching_signature', t],
    ];
    for (const [h, reason, nowSec] of refused) {
      let err: unknown;
      try {
        verifyConnectWebhook(body, h, e.secret, 300, { nowSec });
      } catch (x) {
        err = x;
      }
      expect(err, `${h} at ${nowSec - t}`).toBeInstanceOf(WebhookSignatureError);
      expect((err as WebhookSignatureError & { reason: string }).reason).toBe(reason);
    }
    for (const skew of [-299, 0, 299]) expect(verifyConnectWebhook(body, header, e.secret, 300, { nowSec: t + skew }).type).toBe('webhook_endpoint.test');
    expect(() => verifyConnectWebhook(body, header, 'whsec_wrong', 300, { nowSec: t })).toThrow(WebhookSignatureError);
  });

  it('F5 a receiver that never answers or stalls after the headers: ends at the delivery timeout, logged, retried; others not delayed', {
    timeout: 60_000,
  }, async () => {
    const a = await workspace(app);
    const hang = await server(() => undefined);
    const stall = await server((_req, res) => void (res.writeHead(200, { 'content-type': 'text/plain' }), res.write('partial')));
    const fast = await receiver();
    const slow = [await endpoint(a, hang), await endpoint(a, stall)];
    const quick = await endpoint(a, fast.url);
    const queued = [await sendTest(a, slow[0]!.id), await sendTest(a, slow[1]!.id)];
    const started = Date.now();
    let hung = true;
    const batch = app.platform.outbox.runOnce().finally(() => (hung = false));
    await sendTest(a, quick.id);
    // A second batch runs while the first hangs: the healthy endpoint is served meanwhile.
    await pump(app, () => fast.received.length === 1, 'the healthy endpoint');
    expect(hung, 'the healthy endpoint was served while the first batch waited').toBe(true);
    await batch;
    expect(Date.now() - started).toBeGreaterThanOrEqual(DELIVERY_TIMEOUT_MS - 50);
    for (const [i, q] of queued.entries()) {
      await pump(app, () => settled(app, q.id));
      const log = await delivery(a, slow[i]!.id, q.id);
      expect(log).toMatchObject({ status: 'retrying', attempt: 1, failure_reason: 'timeout' });
      expect(log.next_retry_at).toBeTruthy();
    }
    // Their retries would hang later tests' batches for the timeout: stop them.
    for (const e of slow) await app.inject({ method: 'PATCH', url: `${BASE}/${e.id}`, headers: { authorization: a.connect }, payload: { status: 'disabled' } });
  });

  it('F6 receiver answers 301/302/307/308 elsewhere: not followed (target 0 requests); a failure', async () => {
    const a = await workspace(app);
    const target = await receiver();
    for (const code of [301, 302, 307, 308]) {
      const url = await server((_req, res) => void (res.writeHead(code, { location: target.url }), res.end()));
      const e = await endpoint(a, url);
      const q = await sendTest(a, e.id);
      await pump(app, () => settled(app, q.id));
      expect(await delivery(a, e.id, q.id)).toMatchObject({ status: 'retrying', response_status: code, failure_reason: 'redirect' });
    }
    expect(target.received).toHaveLength(0);
  });

  it('F7 receiver answers 200 with 50 MB: the read stops at a cap; the log keeps a few KB', { timeout: 60_000 }, async () => {
    const a = await workspace(app);
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    const url = await server((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      const push = () => {
        while (sent < 50 * chunk.length) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', push);
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      push();
    });
    const e = await endpoint(a, url);
    const q = await sendTest(a, e.id);
    await pump(app, () => settled(app, q.id));
    const log = await delivery(a, e.id, q.id);
    expect(log).toMatchObject({ status: 'succeeded', response_status: 200 });
    expect(log.response_body.length).toBeLessThanOrEqual(16 * 1024);
    expect(sent).toBeLessThan(25 * chunk.length);
  });

  it('F8 several attempts of one event: same id in body and headers, identical body bytes; fresh t and signature each time', async () => {
    const a = await workspace(app);
    const r = await receiver(() => 500);
    const e = await endpoint(a, r.url);
    const q = await sendTest(a, e.id);
    await pump(app, () => r.received.length === 1, 'attempt 1');
    await pump(app, () => settled(app, q.id));
    clock.advance(6_000);
    await pump(app, () => r.received.length === 2, 'attempt 2');
    const [first, second] = r.received as [(typeof r.received)[0], (typeof r.received)[0]];
    expect(second.body).toBe(first.body);
    expect(JSON.parse(second.body).id).toBe(q.event_id);
    expect([first.headers['x-connect-event-id'], second.headers['x-connect-event-id']]).toEqual([q.event_id, q.event_id]);
    expect(tOf(signature(second))).toBeGreaterThanOrEqual(tOf(signature(first)) + 5);
    expect(signature(second)).not.toBe(signature(first));
    expect(stripe.webhooks.constructEvent(second.body, signature(second), e.secret, 300, undefined, tOf(signature(second))).id).toBe(q.event_id);
  });

  it('F9 signing secret rotated with overlap: two v1 values meanwhile, Stripe accepts either secret; then only the new', async () => {
    const a = await workspace(app);
    const r = await receiver();
    const e = await endpoint(a, r.url);
    const rotated = (
      await app.inject({ method: 'POST', url: `${BASE}/${e.id}/rotate-secret`, headers: { authorization: a.connect }, payload: { overlap_seconds: 60 } })
    ).json();
    await sendTest(a, e.id);
    await pump(app, () => r.received.length === 1, 'during the overlap');
    const during = r.received[0]!;
    expect(signature(during)).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [e.secret, rotated.secret])
      expect(stripe.webhooks.constructEvent(during.body, signature(during), secret, 300).type).toBe('webhook_endpoint.test');
    clock.advance(61_000);
    await sendTest(a, e.id);
    await pump(app, () => r.received.length === 2, 'after the overlap');
    const after = r.received[1]!;
    const at = tOf(signature(after));
    expect(signature(after)).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(() => stripe.webhooks.constructEvent(after.body, signature(after), rotated.secret, 300, undefined, at)).not.toThrow();
    expect(() => stripe.webhooks.constructEvent(after.body, signature(after), e.secret, 300, undefined, at)).toThrow();
  });

  it('F10 endpoint deleted or disabled with deliveries pending: no further attempts; rows cancelled', async () => {
    const a = await workspace(app);
    const r = await receiver();
    const [disabled, deleted] = [await endpoint(a, r.url), await endpoint(a, r.url)];
    const pending = [await sendTest(a, disabled.id), await sendTest(a, deleted.id)];
    // Due later, as a retry would be.
    await app.platform.store.db
      .updateTable('outbox')
      .set({ next_attempt_at: new Date(clock.now().getTime() + 60_000) })
      .where(
        'id',
        'in',
        pending.map((p) => p.id),
      )
      .execute();
    expect(
      (await app.inject({ method: 'PATCH', url: `${BASE}/${disabled.id}`, headers: { authorization: a.connect }, payload: { status: 'disabled' } })).statusCode,
    ).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `${BASE}/${deleted.id}`, headers: { authorization: a.connect } })).statusCode).toBe(204);
    clock.advance(120_000);
    await expectNoChange(
      app,
      async () => {
        for (let i = 0; i < 5; i++) await app.platform.outbox.runOnce();
      },
      { probes: { received: () => r.received.length } },
    );
    expect(await delivery(a, disabled.id, pending[0]!.id)).toMatchObject({ status: 'cancelled', attempt: 0, next_retry_at: null });
    const row = await app.platform.store.db.selectFrom('outbox').selectAll().where('id', '=', pending[1]!.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ attempts: 0 });
    expect(row.status).not.toBe('pending');
    expect(
      await app.platform.store.db
        .selectFrom('delivery_attempts')
        .select('id')
        .where(
          'outbox_id',
          'in',
          pending.map((p) => p.id),
        )
        .execute(),
    ).toEqual([]);
  });

  it("F11 a receiver that hangs until the delivery timeout: each retry is due the schedule's delay after the attempt ended, not after it started", async () => {
    // An app of its own: a 250 ms delivery timeout (the webhook client's timer ends each attempt,
    // in real time) and the schedule's jitter fixed at the midpoint, so that due times are exact.
    const slowClock = movableClock();
    const other = await build({ overrides: { now: slowClock.now, timeouts: { webhookMs: 250 }, random: () => 0.5 } });
    await other.platform.outbox.stop();
    const w = await workspace(other);
    // The receiver takes 10 s on the app's clock, then goes silent until the client gives up.
    const arrivals: number[] = [];
    const url = await server((req) => {
      arrivals.push(slowClock.now().getTime());
      slowClock.advance(10_000);
      req.resume();
    });
    const created = await other.inject({ method: 'POST', url: BASE, headers: { authorization: w.connect }, payload: { url, enabled_events: ['*'] } });
    expect(created.statusCode, created.body).toBe(201);
    const e = created.json() as { id: string };
    const q = (await other.inject({ method: 'POST', url: `${BASE}/${e.id}/test`, headers: { authorization: w.connect } })).json() as { id: string };
    const schedule = [5_000, 300_000, 1_800_000, 7_200_000];
    for (const [i, base] of schedule.entries()) {
      const attempt = i + 1;
      await pump(other, () => arrivals.length === attempt, `attempt ${attempt}`);
      await pump(other, () => settled(other, q.id));
      const settledAt = slowClock.now().getTime();
      const row = await other.platform.store.db
        .selectFrom('outbox')
        .select(['next_attempt_at', 'last_error', 'status'])
        .where('id', '=', q.id)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe('pending');
      // The attempt ended after the receiver's 10 s (and the timeout), and at the latest when it settled.
      const ended = row.next_attempt_at.getTime() - base;
      expect(ended, `after attempt ${attempt}`).toBeGreaterThanOrEqual(arrivals[i]! + 10_000);
      expect(ended, `after attempt ${attempt}`).toBeLessThanOrEqual(settledAt);
      const log = (await other.inject({ url: `${BASE}/${e.id}/deliveries/${q.id}`, headers: { authorization: w.connect } })).json();
      expect(log).toMatchObject({ status: 'retrying', attempt, failure_reason: 'timeout', next_retry_at: row.next_attempt_at.toISOString() });
      slowClock.advance(row.next_attempt_at.getTime() - slowClock.now().getTime() - 1_000);
      await other.platform.outbox.runOnce();
      expect(arrivals, 'not a moment early').toHaveLength(attempt);
      slowClock.advance(1_500);
    }
    await pump(other, () => arrivals.length === schedule.length + 1, 'the attempt after the last step checked');
  });

  // Last: it moves the clock by a day and a half (bearers made before then expire).
  it('F4 receiver answers 500 every time: attempts at 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (± jitter), then failed; all logged; redeliverable', {
    timeout: 120_000,
  }, async () => {
    const a = await workspace(app);
    let answer = 500;
    const r = await receiver(() => answer);
    const e = await endpoint(a, r.url);
    const q = await sendTest(a, e.id);
    const schedule = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
    for (let attempt = 1; attempt <= 8; attempt++) {
      await pump(app, () => r.received.length === attempt, `attempt ${attempt}`);
      await pump(app, () => settled(app, q.id));
      if (attempt === 8) break;
      const row = await app.platform.store.db.selectFrom('outbox').select('next_attempt_at').where('id', '=', q.id).executeTakeFirstOrThrow();
      const delay = row.next_attempt_at.getTime() - clock.now().getTime();
      const base = schedule[attempt - 1]!;
      expect(delay, `after attempt ${attempt}`).toBeGreaterThan(base * 0.9 - 2_000);
      expect(delay, `after attempt ${attempt}`).toBeLessThan(base * 1.1 + 1_000);
      clock.advance(delay - 1_000);
      await app.platform.outbox.runOnce();
      expect(r.received, 'not a moment early').toHaveLength(attempt);
      clock.advance(1_500);
    }
    const headers = { authorization: `Bearer ${await connectBearer(app, a.workspaceId)}` };
    const log = (await app.inject({ url: `${BASE}/${e.id}/deliveries/${q.id}`, headers })).json();
    expect(log).toMatchObject({ status: 'failed', attempt: 8, next_retry_at: null, response_status: 500, failure_reason: 'http_status' });
    expect(log.attempts).toHaveLength(8);
    answer = 200;
    expect((await app.inject({ method: 'POST', url: `${BASE}/${e.id}/deliveries/${q.id}/redeliver`, headers })).statusCode).toBe(202);
    await pump(app, () => r.received.length === 9, 'the redelivery');
    expect(r.received[8]!.body).toBe(r.received[0]!.body);
  });
});
