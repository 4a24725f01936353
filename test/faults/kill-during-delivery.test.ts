// bad-inputs F-1 and F-2: the server is killed with SIGKILL while its outbox worker is posting webhooks
// (the receiver holds the requests and answers 200 only after the kill), and just after the
// 2xx that created those events. After a restart on the same database, the lease of each row
// expires and the row is delivered again with the same event id and the same body bytes: at
// most 2 deliveries per event, 0 lost. The outbox is one table for every API; it runs twice:
// with Login's `chatapp.auth.verified` (X-Login-Signature) and with Connect's `link.revoked` to a
// Connect webhook endpoint (X-Connect-Signature: t=…,v1=…, checked against the endpoint secret
// on every attempt, the catalogue's "Connect delivery").
// "Before its commit" (bad-inputs F-2, second half) cannot be timed from outside the process: the event and
// its change share one transaction (verification.ts), which the unit tests of the outbox cover.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PNG } from '../unit/connect/content/support.js';
import { freshDatabase, kill9, report, sendLogin, startServer, startSession, waitFor, type Server, type ServerInfo } from './support.js';
import { elapse } from '../support/eventually.js';

const EVENTS = 3;
type Database = Awaited<ReturnType<typeof freshDatabase>>;
const databases: Database[] = [];
let server: Server | undefined;
let received: { headers: IncomingHttpHeaders; body: string; at: 'before' | 'after' }[] = [];
let held: ServerResponse[] = [];
let phase: 'before' | 'after' = 'before';
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: phase });
    if (phase === 'before') held.push(res);
    else res.end('ok');
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await server?.stop();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
  for (const database of databases) await database.close();
});

/**
 * Starts a seeded server on a fresh database, lets `cause` create EVENTS events over HTTP (their
 * webhooks to the receiver), kills the server while every first attempt is held, restarts it and
 * waits for the redeliveries. Answers the figures and what the receiver got.
 */
async function killDuringDelivery(id: string, cause: (seed: ServerInfo, hook: string) => Promise<void>) {
  const database = await freshDatabase();
  databases.push(database);
  received = [];
  held = [];
  phase = 'before';
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // The lease must outlive one attempt (the webhook client gives up after 10 s): 12 s instead of
  // the default 60 s, so that the restarted server takes the rows back soon.
  const env = { OUTBOX_LEASE_MS: '12000' };
  server = await startServer(database.url, { ...env, SEED: '1', WEBHOOK_URL: hook });
  await cause(server.info, hook);
  // bad-inputs F-2: every 2xx of `cause` committed its event; the worker is now inside the posts.
  await waitFor(() => new Set(received.map((d) => JSON.parse(d.body).id)).size >= EVENTS, 20_000, 'the first attempts at the receiver');
  await kill9(server);
  for (const res of held) res.end('ok'); // the receiver answers 200 after the kill
  phase = 'after';

  server = await startServer(database.url, env);
  const rows = await database.db.selectFrom('outbox').select(['event_id', 'payload']).execute();
  expect(rows).toHaveLength(EVENTS);
  await waitFor(() => rows.every((r) => received.some((d) => d.at === 'after' && JSON.parse(d.body).id === r.event_id)), 30_000, 'redelivery of every event');
  await elapse(1000, 'absence: room for a third delivery, if any');
  await server.stop();

  const perEvent = rows.map((r) => received.filter((d) => JSON.parse(d.body).id === r.event_id));
  const lost = perEvent.filter((d) => !d.some((x) => x.at === 'after')).length;
  const duplicated = perEvent.reduce((n, d) => n + d.length - 1, 0);
  report(id, { events: EVENTS, deliveries: received.length, lost, duplicated, maxPerEvent: Math.max(...perEvent.map((d) => d.length)) });
  expect(lost).toBe(0);
  for (const [i, deliveries] of perEvent.entries()) {
    expect(deliveries.length).toBeLessThanOrEqual(2);
    // Same event, same bytes, a fresh signature per attempt (bad-inputs F8).
    for (const d of deliveries) expect(d.body).toBe(rows[i].payload);
  }
  // Each event was delivered twice: once held at the kill, once after the restart, the window
  // the at-least-once guarantee names (docs/reliability.md).
  expect(duplicated).toBe(EVENTS);
  return { perEvent };
}

it('F-1 kill -9 during Login webhook deliveries: redelivered after restart with the same event id, ≤ 2 each, 0 lost', async () => {
  await killDuringDelivery('F-1 login', async (seed) => {
    const sessions = [];
    for (let i = 0; i < EVENTS; i++) sessions.push(await startSession(seed));
    // At once, so that the kill falls inside every first attempt (a receiver stalling past the
    // 10 s timeout would earn a retry before the kill, which is bad-inputs F5, not this case).
    const answers = await Promise.all(sessions.map((session) => sendLogin(seed.url, seed, session.loginCode)));
    expect(answers).toEqual(sessions.map(() => 200));
  });
}, 180_000);

it('F-1 kill -9 during Connect deliveries (link.revoked): redelivered with the same event id and a valid X-Connect-Signature, ≤ 2 each, 0 lost', async () => {
  let secret = '';
  const { perEvent } = await killDuringDelivery('F-1 connect', async (seed, hook) => {
    const auth = { authorization: seed.connect! };
    const json = { ...auth, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown, status: number) => {
      const res = await fetch(`${seed.url}/api/connect${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
      expect(res.status, await res.clone().text()).toBe(status);
      return (await res.json()) as { id: string; secret?: string };
    };
    const endpoint = await post('/webhook-endpoints', { url: hook, enabled_events: ['link.revoked'] }, 201);
    secret = endpoint.secret!;
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'offer.png');
    const upload = await fetch(`${seed.url}/api/connect/documents`, { method: 'POST', headers: auth, body: form });
    expect(upload.status).toBe(201);
    const document = (await upload.json()) as { id: string };
    const links = [];
    for (let i = 0; i < EVENTS; i++)
      links.push(await post('/links', { document_id: document.id, external_id: `crm-${i}`, recipient: { email: `r${i}@example.com` } }, 201));
    // At once, as above: every first attempt is held by the receiver when the kill comes.
    await Promise.all(links.map((link) => post(`/links/${link.id}/revoke`, {}, 200)));
  });
  for (const deliveries of perEvent) {
    const event = JSON.parse(deliveries[0].body) as { id: string; type: string };
    expect(event.type).toBe('link.revoked');
    for (const d of deliveries) {
      expect(d.headers['x-connect-event-id']).toBe(event.id);
      expect(d.headers['x-connect-event-type']).toBe('link.revoked');
      // Stripe's scheme: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>.
      const signature = String(d.headers['x-connect-signature']);
      expect(signature).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]+)$/.exec(signature)!;
      expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(300);
      expect(v1).toBe(createHmac('sha256', secret).update(`${t}.${d.body}`).digest('hex'));
    }
  }
}, 180_000);
