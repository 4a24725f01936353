// Catalogue group E (inbound provider webhook, POST/GET /api/webhook/chatapp, and the commerce
// order webhook for bad-inputs E10) against the shared fixture. Every refusal is checked with
// `expectNoChange`, with the platform events published meanwhile as a probe.
// bad-inputs E6's "one flow run" half (a message dispatched twice starts one run) is proven in
// test/unit/messaging/automation/bad-inputs.test.ts; here: one row and one event.
// Added cases: bad-inputs E11 (A's order webhook id with B's webhook secret); bad-inputs E12–E14 (per-IP limits and
// the signature, on an app with the default limits, with the provider's own published payloads); bad-inputs E15
// (a location out of range refused at the webhook, delivery acknowledged, a log line).
import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildShared } from '../helper.js';
import { newId } from '#server/lib/ids.js';
import { sha256Header } from '#server/lib/signatures.js';
import type { PlatformEvent } from '#server/events/bus.js';
import { deliver, orderWebhook, shopifyHeaders, shopifyOrder, sign } from '../unit/messaging/commerce/support.js';
import { expectNoChange, expectProblem, workspace, type Workspace } from './support.js';
import { CUSTOMER, INBOUND_URL, envelope, inbound, postInbound, settle, textMessage } from './inbound.js';
import { metaStatusDelivery, metaTextDelivery } from '../fakes/meta-webhook-examples.js';
import { eventually } from '../support/eventually.js';
import { loggedApp } from './logged-app.js';

const app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '100000', RATE_LIMIT_PER_MINUTE: '100000' } });
const events: PlatformEvent[] = [];
afterAll(app.platform.bus.subscribe('*', (e) => void events.push(e)));
const eventProbe = { events: () => events.length };
const post = (body: object | string, signature?: string | null) => postInbound(app, body, signature);
const messagesOf = (w: Workspace) =>
  app.platform.store.db.selectFrom('messages').selectAll().where('workspace_id', '=', w.workspaceId).orderBy('provider_message_id').execute();
const statusUpdate = (id: string, status: string, at: number) => ({ id, status, timestamp: String(at), recipient_id: CUSTOMER });

/** An outbound message of `w` the provider knows as `wamid`. */
async function outbound(w: Workspace, wamid: string) {
  const db = app.platform.store.db;
  const contact = { id: newId('ct'), workspace_id: w.workspaceId, phone: `+${CUSTOMER}` };
  await db.insertInto('contacts').values(contact).execute();
  const row = {
    id: newId('msg'),
    workspace_id: w.workspaceId,
    phone_number_id: w.pnId,
    contact_id: contact.id,
    direction: 'outbound' as const,
    type: 'text',
    content: JSON.stringify({ text: 'Hi' }),
    provider_message_id: wamid,
    status: 'accepted',
    error: null,
  };
  await db.insertInto('messages').values(row).execute();
  return row.id;
}
/** `outbound` on another app. */
async function outboundOn(on: typeof app, w: Workspace, wamid: string) {
  const db = on.platform.store.db;
  const contact = { id: newId('ct'), workspace_id: w.workspaceId, phone: '+16505551234' };
  await db
    .insertInto('contacts')
    .values(contact)
    .onConflict((oc) => oc.columns(['workspace_id', 'phone']).doNothing())
    .execute();
  const { id } = await db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', w.workspaceId)
    .where('phone', '=', contact.phone)
    .executeTakeFirstOrThrow();
  const row = {
    id: newId('msg'),
    workspace_id: w.workspaceId,
    phone_number_id: w.pnId,
    contact_id: id,
    direction: 'outbound' as const,
    type: 'text',
    content: JSON.stringify({ text: 'Hi' }),
    provider_message_id: wamid,
    status: 'accepted',
    error: null,
  };
  await db.insertInto('messages').values(row).execute();
  return row.id;
}
const messageRow = (id: string) => app.platform.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('E. Inbound provider webhook', () => {
  it('E1 POST without X-Hub-Signature-256; signed with another secret; sha1= prefix: 401 invalid-signature', async () => {
    const a = await workspace(app);
    const raw = JSON.stringify(inbound(a, [textMessage('wamid.E1', 'hi')]));
    const secret = app.platform.providerAppSecret;
    await expectNoChange(
      app,
      async () => {
        for (const sig of [
          null,
          sha256Header('another-secret', raw),
          `sha1=${createHmac('sha1', secret).update(raw).digest('hex')}`,
          '',
          'sha256=',
          `sha256=${'0'.repeat(64)}`,
        ]) {
          const res = await post(raw, sig);
          expectProblem(res, 401, 'invalid-signature');
          expect(res.body).not.toContain(secret);
        }
      },
      { probes: eventProbe },
    );
  });

  it('E2 a signature of JSON.stringify(JSON.parse(body)) with the original, differently spaced body: 401 (raw bytes signed)', async () => {
    const a = await workspace(app);
    const raw = JSON.stringify(inbound(a, [textMessage('wamid.E2', 'hi')]), null, 2);
    const reserialised = sha256Header(app.platform.providerAppSecret, JSON.stringify(JSON.parse(raw)));
    await expectNoChange(app, async () => expectProblem(await post(raw, reserialised), 401, 'invalid-signature'), { probes: eventProbe });
    expect((await post(raw)).statusCode).toBe(200); // the bytes as sent, signed, pass
  });

  it('E3 body over the limit (Content-Length and streamed): 413 before signature or JSON work; unsigned: 401 before the body is read', async () => {
    const big = `{"x":"${'a'.repeat(1024 * 1024)}`; // not JSON, and its signature only has the right shape: only the size can answer
    const shaped = `sha256=${'0'.repeat(64)}`;
    await expectNoChange(
      app,
      async () => {
        expectProblem(await post(big, shaped), 413, 'payload-too-large');
        const streamed = await app.inject({
          method: 'POST',
          url: INBOUND_URL,
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': shaped },
          payload: Readable.from([Buffer.from(big)]),
        });
        expectProblem(streamed, 413, 'payload-too-large');
        expectProblem(await post(big, null), 401, 'invalid-signature');
      },
      { probes: eventProbe },
    );
  });

  it('E4 malformed JSON, correctly signed: 400 malformed-body', async () => {
    await expectNoChange(
      app,
      async () => {
        for (const raw of ['{"object": "whatsapp_business_account", "entry": [', '', '{"a":1,}']) expectProblem(await post(raw), 400, 'malformed-body');
      },
      { probes: eventProbe },
    );
  });

  it('E5 signed, with unknown object, change field, message type or extra fields: 200; unknown parts ignored, known ones processed', async () => {
    const a = await workspace(app);
    await expectNoChange(
      app,
      async () => {
        const other = await post({ object: 'page', entry: [{ id: '1', changes: [{ field: 'feed', value: {} }] }] });
        expect([other.statusCode, other.json()]).toEqual([200, { received: true }]);
        await settle();
      },
      { probes: eventProbe },
    );
    const body = inbound(a, [
      { ...textMessage('wamid.E5a', 'known'), surprise: { nested: true } },
      { from: CUSTOMER, id: 'wamid.E5b', timestamp: '1', type: 'hologram', hologram: {} },
    ]);
    const entry = body.entry[0]!;
    const mixed = { ...body, extra: 1, entry: [{ ...entry, changes: [{ field: 'account_update', value: { event: 'VERIFIED' } }, ...entry.changes] }] };
    const res = await post(mixed);
    expect([res.statusCode, res.json()]).toEqual([200, { received: true }]);
    // Kinds the contract does not model are kept as `unsupported` (the customer did write).
    expect((await messagesOf(a)).map((m) => [m.type, m.content])).toEqual([
      ['text', { text: 'known' }],
      ['unsupported', { text: 'Unsupported message (hologram)' }],
    ]);
  });

  it('E6 one message id twice (two deliveries, and twice in a batch): one message row, one event', async () => {
    const a = await workspace(app);
    const body = inbound(a, [textMessage('wamid.E6', 'hi'), textMessage('wamid.E6', 'hi')]);
    const before = events.length;
    expect((await post(body)).statusCode).toBe(200);
    await settle();
    const received = () => events.slice(before).filter((e) => e.type === 'message.received' && e.workspaceId === a.workspaceId);
    expect(received()).toHaveLength(1);
    await expectNoChange(
      app,
      async () => {
        expect((await post(body)).statusCode).toBe(200);
        await settle();
      },
      { probes: eventProbe },
    );
    expect(await messagesOf(a)).toHaveLength(1);
  });

  it('E7 statuses read, delivered, sent in that order: stays read, read time kept', async () => {
    const a = await workspace(app);
    const id = await outbound(a, 'wamid.E7');
    const readAt = Math.floor(Date.now() / 1000) - 60;
    expect((await post(envelope(a, { statuses: [statusUpdate('wamid.E7', 'read', readAt)] }))).statusCode).toBe(200);
    const read = await messageRow(id);
    expect(read.status).toBe('read');
    await expectNoChange(
      app,
      async () => {
        for (const [s, t] of [
          ['delivered', readAt + 10],
          ['sent', readAt + 20],
        ] as const)
          expect((await post(envelope(a, { statuses: [statusUpdate('wamid.E7', s, t)] }))).statusCode).toBe(200);
        await settle();
      },
      { probes: eventProbe },
    );
    expect(await messageRow(id)).toEqual(read);
    expect(new Date(read.status_at!).getTime()).toBe(readAt * 1000);
  });

  it("E8 a status for B's message under A's phone_number_id; a phone_number_id of no workspace: 200, ignored", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const bMessage = await outbound(b, `wamid.E8.${b.workspaceId}`);
    const now = Math.floor(Date.now() / 1000);
    await expectNoChange(
      app,
      async () => {
        expect((await post(envelope(a, { statuses: [statusUpdate(`wamid.E8.${b.workspaceId}`, 'read', now)] }))).statusCode).toBe(200);
        const nowhere = envelope(
          { providerPnId: '199999999999999', number: '+15550000000' },
          {
            contacts: [{ profile: { name: 'X' }, wa_id: CUSTOMER }],
            messages: [textMessage('wamid.E8in', 'hi')],
            statuses: [statusUpdate(`wamid.E8.${b.workspaceId}`, 'read', now)],
          },
        );
        const res = await post(nowhere);
        expect([res.statusCode, res.json()]).toEqual([200, { received: true }]);
        await settle();
      },
      { probes: eventProbe },
    );
    expect((await messageRow(bMessage)).status).toBe('accepted');
  });

  it('E9 GET with a wrong hub.verify_token or hub.mode=unsubscribe: 403 without the challenge; the right one echoes <b>x</b> as text/plain', async () => {
    const token = app.platform.providerVerifyToken;
    const challenge = '<b>x</b>';
    const verify = (mode: string, t: string) =>
      app.inject({ url: INBOUND_URL, query: { 'hub.mode': mode, 'hub.verify_token': t, 'hub.challenge': challenge } });
    await expectNoChange(app, async () => {
      for (const res of [await verify('subscribe', `${token}x`), await verify('subscribe', ''), await verify('unsubscribe', token)]) {
        expectProblem(res, 403, 'forbidden');
        expect(res.body).not.toContain(challenge);
        expect(res.body).not.toContain(token);
      }
    });
    const ok = await verify('subscribe', token);
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    expect(ok.headers['x-content-type-options']).toBe('nosniff');
    expect(ok.body).toBe(challenge);
  });

  it('E10 commerce order webhook unsigned or badly signed: 401 invalid-signature; no template message sent', async () => {
    const a = await workspace(app);
    const hook = await orderWebhook(app, a, 'shopify');
    const raw = JSON.stringify(shopifyOrder());
    const { 'x-shopify-hmac-sha256': _, ...unsigned } = shopifyHeaders(hook.secret, raw);
    await expectNoChange(
      app,
      async () => {
        for (const headers of [
          unsigned,
          { ...unsigned, 'x-shopify-hmac-sha256': sign('not-the-secret', raw) },
          { ...unsigned, 'x-shopify-hmac-sha256': sign(hook.secret, `${raw} `) },
        ]) {
          const res = await deliver(app, hook.id, raw, headers);
          expectProblem(res, 401, 'invalid-signature');
          expect(res.body).not.toContain(hook.secret);
        }
      },
      { probes: eventProbe },
    );
  });

  it("E11 a correctly signed order for A's webhook id delivered with B's webhook secret: 401, nothing sent", async () => {
    const a = await workspace(app);
    const b = await workspace(app);
    const [hookA, hookB] = [await orderWebhook(app, a, 'shopify'), await orderWebhook(app, b, 'shopify')];
    const raw = JSON.stringify(shopifyOrder());
    await expectNoChange(app, async () => expectProblem(await deliver(app, hookA.id, raw, shopifyHeaders(hookB.secret, raw)), 401, 'invalid-signature'), {
      probes: eventProbe,
    });
  });

  describe('per-IP limits and the signature (default limits)', async () => {
    // The public per-IP limit as shipped (RATE_LIMIT_IP_PER_MINUTE 120); each case from its own address.
    const limitedApp = await buildShared();
    const perMinute = limitedApp.config.rateLimitIpPerMinute;
    const from = (ip: string, raw: string, signature: string | null) =>
      limitedApp.inject({
        method: 'POST',
        url: INBOUND_URL,
        remoteAddress: ip,
        headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'x-hub-signature-256': signature }) },
        payload: raw,
      });
    const signed = (raw: string) => sha256Header(limitedApp.platform.providerAppSecret, raw);
    const statuses = (responses: { statusCode: number }[]) =>
      responses.reduce<Record<number, number>>((n, r) => {
        n[r.statusCode] = (n[r.statusCode] ?? 0) + 1;
        return n;
      }, {});

    it("E12 210 signed deliveries in one burst from one IP (Meta's own payloads): 0 answers 429, every message stored, its statuses applied", async () => {
      expect(perMinute).toBe(120);
      const a = await workspace(limitedApp);
      const wamids = Array.from({ length: 210 }, (_, i) => `wamid.E12.${a.workspaceId}.${i}`);
      const bodies = wamids.map((id) => JSON.stringify(metaTextDelivery(a, id)));
      const answers = await Promise.all(bodies.map((raw) => from('203.0.113.12', raw, signed(raw))));
      expect(statuses(answers)).toEqual({ 200: 210 });
      // A 200 means stored durably; under a burst the inbox processes them just after (provider-inbox.ts).
      const stored = await eventually(
        async () => {
          const rows = await limitedApp.platform.store.db
            .selectFrom('messages')
            .select('provider_message_id')
            .where('workspace_id', '=', a.workspaceId)
            .execute();
          return rows.length >= wamids.length && rows;
        },
        { within: 90_000, what: 'the 210 messages processed', app: limitedApp },
      );
      expect(stored.map((m) => m.provider_message_id).sort()).toEqual([...wamids].sort());
      // Statuses from the same address in the same minute, in Meta's published shape, are taken too.
      const id = await outboundOn(limitedApp, a, `wamid.E12.out.${a.workspaceId}`);
      for (const status of ['sent', 'delivered', 'read'] as const) {
        const raw = JSON.stringify(metaStatusDelivery(a, `wamid.E12.out.${a.workspaceId}`, status));
        expect((await from('203.0.113.12', raw, signed(raw))).statusCode).toBe(200);
      }
      expect((await limitedApp.platform.store.db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe('read');
    });

    it('E13 unsigned and badly signed bursts from one IP: 401 up to the per-IP limit, then 429 problem+json with Retry-After; a signed delivery from that IP still passes', async () => {
      const a = await workspace(limitedApp);
      const raw = JSON.stringify(metaTextDelivery(a, `wamid.E13.${a.workspaceId}`));
      const burst = async (ip: string, signature: string | null) => {
        const answers = [];
        for (let i = 0; i < perMinute + 10; i++) answers.push(await from(ip, raw, signature));
        return answers;
      };
      await expectNoChange(limitedApp, async () => {
        for (const [ip, signature] of [
          ['203.0.113.13', null],
          ['203.0.113.14', sha256Header('another-secret', raw)],
          ['203.0.113.15', 'sha1=0123'],
        ] as const) {
          const answers = await burst(ip, signature);
          expect(statuses(answers)).toEqual({ 401: perMinute, 429: 10 });
          const refused = answers.at(-1)!;
          expectProblem(refused, 429, 'rate-limited');
          expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        }
      });
      const ok = await from('203.0.113.14', raw, signed(raw));
      expect(ok.statusCode, ok.body).toBe(200);
    });

    it('E14 a badly signed delivery is refused before its body is parsed or any transaction opens: 401 for bytes that are not even JSON', async () => {
      const a = await workspace(limitedApp);
      const db = limitedApp.platform.store.db;
      const raw = JSON.stringify(metaTextDelivery(a, `wamid.E14.${a.workspaceId}`));
      // Where each transaction came from. The app's own workers (session expiry, campaigns,
      // automation timers) open theirs on their timers; none may open on the delivery's path.
      const opened: string[] = [];
      const real = db.transaction.bind(db);
      const transactions = vi.spyOn(db, 'transaction').mockImplementation(() => (opened.push(new Error().stack ?? ''), real()));
      const received = vi.spyOn(limitedApp.providerInbox, 'receive');
      try {
        await expectNoChange(limitedApp, async () => {
          for (const body of [raw, '{"object": "whatsapp_business_account", "entry": [', '{"__proto__": {"polluted": true}}']) {
            expectProblem(await from('203.0.113.16', body, sha256Header('another-secret', body)), 401, 'invalid-signature');
          }
        });
        expect(opened.filter((stack) => /provider-(webhook|inbox|signature)/.test(stack))).toEqual([]);
        expect(received).not.toHaveBeenCalled(); // nothing reached the handler, to be stored or applied
      } finally {
        transactions.mockRestore();
        received.mockRestore();
      }
      // The same malformed bytes correctly signed reach the parser (bad-inputs E4): the signature came first.
      const malformed = '{"object": "whatsapp_business_account", "entry": [';
      expectProblem(await from('203.0.113.16', malformed, signed(malformed)), 400, 'malformed-body');
    });
  });
});

describe('E15 location out of range', async () => {
  const { app: logged, lines } = await loggedApp({ level: 'info' });
  it('E15 a shared location beyond ±90/±180 degrees: delivery acknowledged (200), the message refused with a log line, never stored as another value', async () => {
    const a = await workspace(logged);
    const location = (id: string, latitude: unknown, longitude: unknown) => ({
      from: CUSTOMER,
      id,
      timestamp: String(Math.floor(Date.now() / 1000)),
      type: 'location',
      location: { latitude, longitude, name: 'Somewhere' },
    });
    const bad = [location('wamid.E15.lat', 123.4, 13.4), location('wamid.E15.lng', 52.5, -180.5), location('wamid.E15.edge', 90.000001, 0)];
    await expectNoChange(logged, async () => {
      const res = await postInbound(logged, inbound(a, bad));
      expect(res.statusCode).toBe(200); // acknowledged: the provider does not retry it
    });
    expect(lines.filter((l) => l.includes('location out of range')).length).toBe(3);
    // Alongside them, the edges themselves are places: stored exactly.
    const good = await postInbound(logged, inbound(a, [location('wamid.E15.ok', -90, 180), location('wamid.E15.bad', -91, 0)]));
    expect(good.statusCode).toBe(200);
    const stored = await logged.platform.store.db
      .selectFrom('messages')
      .select(['provider_message_id', 'content'])
      .where('workspace_id', '=', a.workspaceId)
      .execute();
    expect(stored).toEqual([{ provider_message_id: 'wamid.E15.ok', content: { location: { latitude: -90, longitude: 180, name: 'Somewhere' } } }]);
  });
});
