// verifyConnectWebhook, verifyMessagingWebhook and verifyLoginWebhook on REAL deliveries of the
// server, captured by a local receiver: valid, tampered body, wrong secret, stale timestamp,
// rotation with two signatures, missing and malformed headers.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { newSecret } from '#server/lib/ids.js';
import {
  createConnectClient,
  createMessagingClient,
  unwrap,
  verifyConnectWebhook,
  verifyLoginWebhook,
  verifyMessagingWebhook,
  WebhookSignatureError,
  type WebhookSignatureReason,
} from '../../../clients/index.js';
import { connectBearer } from '#test/support/connect.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { startReceiver, type Received } from '#test/support/receiver.js';
import { createKey, signUp } from '../account/support.js';
import { pump } from '../webhooks/support.js';
import { serve, type Served } from './support.js';

let s: Served;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let workspaceId: string;
let connect: ReturnType<typeof createConnectClient>;
let messagingKey: string;

beforeAll(async () => {
  s = await serve();
  receiver = await startReceiver(() => 200);
  const owner = await signUp(s.app);
  workspaceId = owner.workspace.id;
  connect = createConnectClient({ baseUrl: s.baseUrl, auth: { bearer: await connectBearer(s.app, workspaceId) } });
  messagingKey = (await createKey(s.app, owner.token)).secret;
});
afterAll(() => receiver.close());

/** The next delivery the receiver gets with `header` (the outbox is run until it arrives). */
async function next(header: string, after: number): Promise<Received> {
  await pump(s.app, () => receiver.received.slice(after).some((r) => r.headers[header]), `a delivery with ${header}`);
  return receiver.received.slice(after).find((r) => r.headers[header])!;
}

function reason(fn: () => unknown): WebhookSignatureReason | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof WebhookSignatureError) return e.reason;
    throw e;
  }
  return undefined;
}

const tSec = (header: string) => Number(/t=(\d+)/.exec(header)![1]);

describe('Connect (X-Connect-Signature, t= and v1=)', () => {
  let endpoint: { id: string; secret: string };
  let delivery: Received;
  let header: string;

  beforeAll(async () => {
    const created = unwrap(await connect.POST('/api/connect/webhook-endpoints', { body: { url: receiver.url, enabled_events: ['*'] } }));
    endpoint = { id: created.id, secret: created.secret };
    const before = receiver.received.length;
    unwrap(await connect.POST('/api/connect/webhook-endpoints/{endpointId}/test', { params: { path: { endpointId: endpoint.id } } }));
    delivery = await next('x-connect-signature', before);
    header = String(delivery.headers['x-connect-signature']);
  });

  it('a real delivery verifies and parses to the typed event', () => {
    const event = verifyConnectWebhook(delivery.body, header, endpoint.secret);
    expect(event.id).toBe(delivery.headers['x-connect-event-id']);
    expect(event.type).toBe('webhook_endpoint.test');
    // a Buffer body and Node's header value work the same
    expect(verifyConnectWebhook(Buffer.from(delivery.body), delivery.headers['x-connect-signature'], endpoint.secret).id).toBe(event.id);
  });

  it("agrees with Stripe's SDK: a header it generates verifies, and the server's header passes its constructEvent", () => {
    const stripe = new Stripe('sk_test_x');
    const payload = JSON.stringify({ id: 'evt_1', type: 'link.opened', created: 1, api_version: '2026-11-01', data: {} });
    const generated = stripe.webhooks.generateTestHeaderString({ payload, secret: endpoint.secret });
    expect(verifyConnectWebhook(payload, generated, endpoint.secret).id).toBe('evt_1');
    expect(() => stripe.webhooks.constructEvent(delivery.body, header, endpoint.secret, 300)).not.toThrow();
  });

  it('tampered body: no_matching_signature', () => {
    expect(reason(() => verifyConnectWebhook(delivery.body.replace('"', '" '), header, endpoint.secret))).toBe('no_matching_signature');
    expect(reason(() => verifyConnectWebhook(`${delivery.body}\n`, header, endpoint.secret))).toBe('no_matching_signature');
  });

  it('wrong secret: no_matching_signature', () => {
    expect(reason(() => verifyConnectWebhook(delivery.body, header, newSecret('whsec_')))).toBe('no_matching_signature');
  });

  it('stale or future timestamp beyond the tolerance: timestamp_out_of_tolerance; within it: valid', () => {
    const t = tSec(header);
    expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, 300, { nowSec: t + 301 }))).toBe('timestamp_out_of_tolerance');
    expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, 300, { nowSec: t - 301 }))).toBe('timestamp_out_of_tolerance');
    expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, 300, { nowSec: t + 300 }))).toBeUndefined();
    expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, 10, { nowSec: t + 11 }))).toBe('timestamp_out_of_tolerance');
  });

  it('F-12 a sender 4 minutes off the receiver verifies, 6 minutes off is refused (default tolerance), either way', () => {
    const t = tSec(header);
    for (const off of [-240, 240])
      expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, undefined, { nowSec: t + off }))).toBeUndefined();
    for (const off of [-360, 360])
      expect(reason(() => verifyConnectWebhook(delivery.body, header, endpoint.secret, undefined, { nowSec: t + off }))).toBe('timestamp_out_of_tolerance');
  });

  it('a signed t cannot be moved: a fresh t with the old v1 does not match', () => {
    const moved = header.replace(/t=\d+/, `t=${tSec(header) + 1}`);
    expect(reason(() => verifyConnectWebhook(delivery.body, moved, endpoint.secret, 300, { nowSec: tSec(header) }))).toBe('no_matching_signature');
  });

  it('missing header: missing_header', () => {
    for (const h of [undefined, null, '', '  ']) expect(reason(() => verifyConnectWebhook(delivery.body, h, endpoint.secret))).toBe('missing_header');
  });

  it('malformed headers: malformed_header', () => {
    const v1 = /v1=([0-9a-f]+)/.exec(header)![1]!;
    for (const h of [
      `v1=${v1}`,
      `t=${tSec(header)}`,
      `t=abc,v1=${v1}`,
      `t=${tSec(header)},v1=xyz`,
      `t=1,t=2,v1=${v1}`,
      'garbage',
      `t=${tSec(header)},${Array(9).fill(`v1=${v1}`).join(',')}`,
    ]) {
      expect(
        reason(() => verifyConnectWebhook(delivery.body, h, endpoint.secret)),
        h,
      ).toBe('malformed_header');
    }
  });

  it('rotation: the delivery carries two v1, each secret verifies it alone; a receiver may pass both secrets', async () => {
    const rotated = unwrap(
      await connect.POST('/api/connect/webhook-endpoints/{endpointId}/rotate-secret', {
        params: { path: { endpointId: endpoint.id } },
        body: { overlap_seconds: 3600 },
      }),
    );
    const before = receiver.received.length;
    unwrap(await connect.POST('/api/connect/webhook-endpoints/{endpointId}/test', { params: { path: { endpointId: endpoint.id } } }));
    const during = await next('x-connect-signature', before);
    const h = String(during.headers['x-connect-signature']);
    expect(h.match(/v1=/g)).toHaveLength(2);
    expect(verifyConnectWebhook(during.body, h, rotated.secret).type).toBe('webhook_endpoint.test');
    expect(verifyConnectWebhook(during.body, h, endpoint.secret).type).toBe('webhook_endpoint.test');
    expect(verifyConnectWebhook(during.body, h, [newSecret('whsec_'), rotated.secret]).type).toBe('webhook_endpoint.test');
    expect(reason(() => verifyConnectWebhook(during.body, h, newSecret('whsec_')))).toBe('no_matching_signature');
  });
});

describe('Messaging (X-Messaging-Signature, the same scheme)', () => {
  it('a real delivery verifies with verifyMessagingWebhook; tampering, a wrong secret and a stale t are refused', async () => {
    const messaging = createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey: messagingKey } });
    const created = unwrap(await messaging.POST('/api/webhook-endpoints', { body: { url: receiver.url, enabled_events: ['message.received'] } }));
    const before = receiver.received.length;
    await s.app.platform.store.db
      .transaction()
      .execute((tx) => emitEvent(tx, { workspaceId, api: 'messaging', type: 'message.received', data: { message_id: 'msg_1' } }));
    const d = await next('x-messaging-signature', before);
    const h = String(d.headers['x-messaging-signature']);
    const event = verifyMessagingWebhook(d.body, h, created.secret);
    expect(event).toMatchObject({ id: d.headers['x-messaging-event-id'], type: 'message.received', workspace_id: workspaceId });
    expect(reason(() => verifyMessagingWebhook(d.body.replace('msg_1', 'msg_2'), h, created.secret))).toBe('no_matching_signature');
    expect(reason(() => verifyMessagingWebhook(d.body, h, newSecret('whsec_')))).toBe('no_matching_signature');
    expect(reason(() => verifyMessagingWebhook(d.body, h, created.secret, 300, { nowSec: tSec(h) + 3600 }))).toBe('timestamp_out_of_tolerance');
  });
});

describe('Login (X-Login-Signature: sha256=)', () => {
  let f: Awaited<ReturnType<typeof insertLoginApp>>;
  async function verifiedDelivery(): Promise<Received> {
    const res = await s.app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': f.apiKey } });
    const { loginCode } = res.json() as { loginCode: string };
    const before = receiver.received.length;
    await sendFromSandboxPhone(s.app, { phoneNumberId: f.numbers[0]!.id, from: '+15550100202', name: 'Ana', text: `LOGIN ${loginCode}` });
    return next('x-login-signature', before);
  }

  beforeAll(async () => {
    f = await insertLoginApp(s.app, { webhookUrl: receiver.url });
  });

  it('a real chatapp.auth.verified delivery verifies and parses; its id matches X-Login-Event-Id (dedupe on it)', async () => {
    const d = await verifiedDelivery();
    const event = verifyLoginWebhook(d.body, d.headers['x-login-signature'], f.webhookSecret);
    expect(event.type).toBe('chatapp.auth.verified');
    expect(event.id).toBe(d.headers['x-login-event-id']);
    expect(event.data.app_id).toBe(f.appId);
    expect(reason(() => verifyLoginWebhook(d.body.replace('+15550100202', '+15550100999'), d.headers['x-login-signature'], f.webhookSecret))).toBe(
      'no_matching_signature',
    );
    expect(reason(() => verifyLoginWebhook(d.body, d.headers['x-login-signature'], newSecret('whsec_')))).toBe('no_matching_signature');
    expect(reason(() => verifyLoginWebhook(d.body, undefined, f.webhookSecret))).toBe('missing_header');
    for (const h of ['sha256=xyz', `sha1=${'a'.repeat(40)}`, 'a'.repeat(64), `sha256=${'a'.repeat(63)}`]) {
      expect(
        reason(() => verifyLoginWebhook(d.body, h, f.webhookSecret)),
        h,
      ).toBe('malformed_header');
    }
  });

  it('rotation overlap: sha256=<new>,sha256=<old>, each secret verifies', async () => {
    const old = newSecret('whsec_');
    await s.app.platform.store.db
      .updateTable('login_apps')
      .set({ previous_webhook_secret_enc: s.app.platform.secrets.encrypt(old), previous_webhook_secret_until: new Date(s.clock.now().getTime() + 3600_000) })
      .where('id', '=', f.appId)
      .execute();
    const d = await verifiedDelivery();
    const h = String(d.headers['x-login-signature']);
    expect(h.split(',')).toHaveLength(2);
    expect(verifyLoginWebhook(d.body, h, f.webhookSecret).type).toBe('chatapp.auth.verified');
    expect(verifyLoginWebhook(d.body, h, old).type).toBe('chatapp.auth.verified');
  });
});
