// Every notification subscriber recovers what a lost notification would have told it
// (docs/reliability.md, "Lost notifications"). Two instances, A and B, on one database, each on a
// store whose notifications the test can drop (test/support/lossy-store.ts): each case cuts the
// notifications, makes the change, shows they were dropped and that nothing recovered yet where
// something must, then recovers through the LISTEN connection's return (`reconnect()`) or the
// periodic sweep called by the test. The periodic timers are set to an hour, so only the test moves.
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sweepInbound } from '#server/apis/messaging/automation/dispatcher.js';
import { registerInboundResponder } from '#server/apis/messaging/automation/responders.js';
import { pauseNumber, reserveSlots } from '#server/apis/messaging/campaigns/rate.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { apiKeyVerifier } from '#server/auth/api-keys.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { enqueue, Outbox } from '#server/outbox/outbox.js';
import type { Store } from '#server/store/db.js';
import { buildShared } from '#test/helper.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { lossyStore, type LossyStore } from '#test/support/lossy-store.js';
import { openTestStore } from '#test/support/store.js';
import { createKey, signUp } from '../account/support.js';
import { addContacts, call, recipientStates, until, workspace } from '../messaging/campaigns/support.js';

const HOUR = String(3_600_000);
const env = { SECRET_KEY: 'lost-notifications-test-secret-key-0123456789', INBOUND_SWEEP_MS: HOUR, CAMPAIGN_POLL_MS: HOUR };
let base: Store;
let storeA: LossyStore;
let storeB: LossyStore;
let a: FastifyInstance;
let b: FastifyInstance;
let baseB: string;

beforeAll(async () => {
  base = await openTestStore();
  storeA = lossyStore(base);
  storeB = lossyStore(base);
  // A's sandbox answers with statuses after its usual delays, so they come after the campaign
  // worker has written its messages (with none, a status can overtake that write).
  a = await buildShared({ env, overrides: { store: storeA, sandboxTestMode: false } });
  b = await buildShared({ env, overrides: { store: storeB } });
  baseB = await b.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await base?.close();
});
afterEach(() => {
  storeA.reconnect();
  storeB.reconnect();
});

/** Both instances lose every notification from now on. */
function cut() {
  storeA.cut();
  storeB.cut();
}

async function loginFixture() {
  const { apiKey, numbers, appId } = await insertLoginApp(a);
  const res = await a.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': apiKey } });
  expect(res.statusCode, res.body).toBe(201);
  const session = res.json() as { sessionId: string; loginCode: string; subscribeToken: string };
  const status = async (on: FastifyInstance) =>
    (await on.inject({ url: `/v1/auth/chatapp/status/${session.sessionId}`, headers: { 'x-api-key': apiKey } })).json().status as string;
  const login = () => sendFromSandboxPhone(a, { phoneNumberId: numbers[0]!.id, from: '+15550100202', text: `LOGIN ${session.loginCode}` });
  return { ...session, apiKey, appId, status, login };
}

/** A stream of the session on B; `text()` so far, `done` once the server ended it. */
async function streamOnB(session: { sessionId: string; subscribeToken: string }) {
  const abort = new AbortController();
  const res = await fetch(`${baseB}/v1/auth/chatapp/events/${session.sessionId}?token=${encodeURIComponent(session.subscribeToken)}`, { signal: abort.signal });
  expect(res.status).toBe(200);
  let text = '';
  let ready!: () => void;
  const opened = new Promise<void>((r) => (ready = r));
  const done = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (text.includes('retry:')) ready();
    }
    return text;
  })();
  await opened;
  return { done, text: () => text, close: () => abort.abort() };
}

describe('lost notifications: each subscriber recovers', () => {
  it('Login verification: a LOGIN stored while notifications are lost is verified with it, on both instances', async () => {
    const f = await loginFixture();
    cut();
    const message = await f.login();
    await storeA.droppedWith(message.messageId); // message.received was lost
    await storeA.droppedWith(f.sessionId); // and so was login.session
    expect(await f.status(a)).toBe('success');
    expect(await f.status(b)).toBe('success');
  });

  it('Login stream: a stream on B whose notification was lost gets verified when B reconnects', async () => {
    const f = await loginFixture();
    const stream = await streamOnB(f);
    cut();
    await f.login();
    await storeB.droppedWith(f.sessionId);
    expect(stream.text()).not.toContain('event: verified');
    expect(b.loginStreams.count(f.sessionId)).toBe(1);
    storeB.reconnect();
    expect(await stream.done).toMatch(/event: verified\n/);
    expect(b.loginStreams.count(f.sessionId)).toBe(0);
  });

  it('Login stream: without a reconnect, the periodic re-read (at each heartbeat) sends what was missed', async () => {
    const f = await loginFixture();
    const stream = await streamOnB(f);
    cut();
    await f.login();
    await storeB.droppedWith(f.sessionId);
    expect(stream.text()).not.toContain('event: verified');
    expect(await b.loginStreams.resync()).toBe(1);
    expect(await stream.done).toMatch(/event: verified\n/);
  });

  describe('automation dispatch', () => {
    let seen: string[];
    let offs: (() => void)[];
    beforeAll(() => {
      seen = [];
      const responder = { name: 'probe', order: 0, respond: async (_: unknown, m: { messageId: string }) => (seen.push(m.messageId), false) };
      offs = [registerInboundResponder(a, responder), registerInboundResponder(b, responder)];
    });
    afterAll(() => offs.forEach((off) => off()));

    const due = () => base.db.selectFrom('automation_inbound_claims').select('message_id').where('instance_id', 'is', null).execute();

    it('an inbound message whose notification was lost stays due, and is dispatched once when A reconnects', async () => {
      const w = await workspace(a);
      cut();
      const message = await sendFromSandboxPhone(a, { phoneNumberId: w.numberId, from: '+4915112349001', text: 'hello' });
      await Promise.all([storeA.droppedWith(message.messageId), storeB.droppedWith(message.messageId)]);
      expect((await due()).map((r) => r.message_id)).toEqual([message.messageId]);
      expect(seen).not.toContain(message.messageId);
      storeA.reconnect();
      await until(async () => seen.includes(message.messageId), 5_000, 'the dispatch');
      expect(await due()).toEqual([]);
      expect(seen.filter((id) => id === message.messageId)).toHaveLength(1);
    });

    it('the periodic sweep dispatches it too, without a reconnect', async () => {
      const w = await workspace(a);
      cut();
      const message = await sendFromSandboxPhone(a, { phoneNumberId: w.numberId, from: '+4915112349002', text: 'hello' });
      await Promise.all([storeA.droppedWith(message.messageId), storeB.droppedWith(message.messageId)]);
      expect(seen).not.toContain(message.messageId);
      expect(await sweepInbound(b)).toBe(1);
      expect(seen.filter((id) => id === message.messageId)).toHaveLength(1);
      expect(await sweepInbound(a)).toBe(0); // claimed once across instances
    });
  });

  it('kanban placement: the chat is placed with the message, notifications lost or not', async () => {
    const w = await workspace(a);
    const funnelId = newId('kf');
    const at = new Date();
    await base.db
      .insertInto('kanban_funnels')
      .values({ id: funnelId, workspace_id: w.workspaceId, business_account_id: w.accountId, name: 'Leads', created_at: at, updated_at: at })
      .execute();
    await base.db.insertInto('kanban_stages').values({ funnel_id: funnelId, key: 'new', name: 'New', position: 0, color: null }).execute();
    cut();
    const message = await sendFromSandboxPhone(a, { phoneNumberId: w.numberId, from: '+4915112349003', text: 'hi' });
    await storeA.droppedWith(message.messageId);
    const chat = await base.db.selectFrom('messages').select('chat_id').where('id', '=', message.messageId).executeTakeFirstOrThrow();
    const placed = await base.db.selectFrom('kanban_placements').select(['chat_id', 'stage_key']).where('funnel_id', '=', funnelId).execute();
    expect(placed).toEqual([{ chat_id: chat.chat_id, stage_key: 'new' }]);
  });

  it('campaigns due and delivery progress: a start whose wake-up was lost sends when A reconnects; statuses move recipients with notifications lost', async () => {
    const w = await workspace(a);
    await addContacts(base.db, w.workspaceId, 3, '+4915177');
    cut();
    const res = await call(a, w.key)('POST', '/api/campaigns', {
      name: 'Lost wake',
      chatapp_phone_number: w.phone,
      audience: { type: 'all_contacts' },
      template: { name: 'welcome_offer', language: 'en_US' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().id as string;
    await Promise.all([storeA.droppedWith('campaigns_due:'), storeB.droppedWith('campaigns_due:')]);
    expect(await recipientStates(base.db, id)).toEqual({ queued: 3 }); // both workers sleep (poll: an hour)
    storeA.reconnect(); // wakes A's worker at once
    storeA.cut(); // and the sandbox's statuses arrive with notifications lost again
    const states = await until(
      async () => {
        const s = await recipientStates(base.db, id);
        return (s.delivered ?? 0) + (s.read ?? 0) === 3 && s;
      },
      10_000,
      'every recipient delivered',
    );
    expect(states.sent).toBeUndefined();
  });

  it('campaign resumed while the resume was lost: a pause heard earlier does not hold it once A reconnects', async () => {
    const w = await workspace(a);
    await addContacts(base.db, w.workspaceId, 2, '+4915178');
    cut(); // created with both workers asleep: nothing is sent yet
    const res = await call(a, w.key)('POST', '/api/campaigns', {
      name: 'Paused',
      chatapp_phone_number: w.phone,
      audience: { type: 'all_contacts' },
      template: { name: 'welcome_offer', language: 'en_US' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().id as string;
    storeA.heal();
    storeB.heal();
    // Both workers hear the pause (they subscribed before this test's listeners, so hear it first).
    const heard = [a, b].map(
      (on) =>
        new Promise<void>((resolve) => {
          const off = on.platform.bus.subscribe('campaign.state', (e) => {
            if (e.data.campaignId === id && e.data.status === 'paused') resolve(off());
          });
        }),
    );
    expect((await call(a, w.key)('POST', `/api/campaigns/${id}/pause`)).statusCode).toBe(200);
    await Promise.all(heard);
    cut();
    expect((await call(a, w.key)('POST', `/api/campaigns/${id}/resume`)).statusCode).toBe(200);
    await Promise.all([storeA.droppedWith(`"campaignId":"${id}","status":"sending"`), storeB.droppedWith(`"campaignId":"${id}","status":"sending"`)]); // the resume was lost
    expect(await recipientStates(base.db, id)).toEqual({ queued: 2 });
    storeA.reconnect();
    await until(
      async () => {
        const s = await recipientStates(base.db, id);
        return (s.queued ?? 0) + (s.sending ?? 0) === 0 && s;
      },
      10_000,
      'every recipient sent',
    );
  });

  it('number paused by the provider: B, which lost the notification, takes no slot of that number before the pause ends', async () => {
    const w = await workspace(a);
    cut();
    const until = new Date(Date.now() + 60_000);
    // What A's worker does on a provider 429 (worker.ts onSendError): the pause in the table, then the notification.
    await pauseNumber(base.db, w.numberId, until);
    await a.platform.bus.publish({ type: 'campaign.number_paused', workspaceId: w.workspaceId, data: { phoneNumberId: w.numberId, until: until.getTime() } });
    await storeB.droppedWith(w.numberId);
    const slots = await base.db.transaction().execute((trx) => reserveSlots(trx, w.numberId, 100, 2, new Date()));
    expect(slots.at[0]!.getTime()).toBeGreaterThanOrEqual(until.getTime());
  });

  it('outbox: a row enqueued while its wake-up was lost is delivered when the LISTEN connection is back', async () => {
    const posted: string[] = [];
    const outbox = new Outbox({
      store: storeA,
      instanceId: 'lost-notify',
      idleMs: 3_600_000,
      post: async (_url, _headers, body) => (posted.push(body), { status: 200 }),
    });
    outbox.register('lost_probe', async () => ({ url: 'https://receiver.example/hook', headers: () => ({}) }));
    await outbox.start();
    try {
      await outbox.runOnce(); // nothing else of this kind is due
      const workspaceId = (await insertLoginApp(a)).workspaceId;
      cut();
      await enqueue(base.db, { workspaceId, endpointKind: 'lost_probe', endpointId: 'probe', eventId: newId('evt'), eventType: 'probe', payload: '{"n":1}' });
      await storeA.droppedWith('outbox_due:');
      expect(posted).toEqual([]);
      storeA.reconnect();
      await until(async () => posted.length === 1, 5_000, 'the delivery');
      expect(posted).toEqual(['{"n":1}']);
    } finally {
      await outbox.stop();
    }
  });

  it('key caches: a Messaging key revoked on A while B lost the invalidation is refused by B once it reconnects', async () => {
    const owner = await signUp(a);
    const key = await createKey(a, owner.token, { name: 'lost' });
    const onB = () => b.inject({ url: '/api/contacts', headers: { 'x-api-key': key.secret } });
    expect((await onB()).statusCode).toBe(200); // now in B's cache
    cut();
    await base.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', key.id).execute();
    await apiKeyVerifier(a.platform).invalidate(key.id, owner.workspace.id);
    await storeB.droppedWith(key.id);
    expect((await onB()).statusCode).toBe(200); // B's cache still holds it (for up to 5 s)
    storeB.reconnect();
    expect((await onB()).statusCode).toBe(401);
  });

  it('key caches: a Login key rotated on A while B lost the invalidation is refused by B once it reconnects', async () => {
    const f = await loginFixture();
    const verifierB = b.loginKeys;
    expect(await verifierB.verify(f.apiKey)).toMatchObject({ appId: f.appId });
    cut();
    await base.db
      .updateTable('login_apps')
      .set({ api_key_digest: a.platform.secrets.digest(newSecret('lk_live_')) })
      .where('id', '=', f.appId)
      .execute();
    const app = await base.db.selectFrom('login_apps').select('workspace_id').where('id', '=', f.appId).executeTakeFirstOrThrow();
    await a.loginKeys.invalidate(f.appId, app.workspace_id);
    await storeB.droppedWith(f.appId);
    expect(await verifierB.verify(f.apiKey)).toMatchObject({ appId: f.appId }); // cached
    storeB.reconnect();
    expect(await verifierB.verify(f.apiKey)).toBeNull();
  });
});
