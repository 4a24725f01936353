// The hosted webhook /api/chatapp-auth/webhook/{appId}: bad-inputs F2-style signature over the raw bytes
// (checked with a plain HMAC here), nothing stored on a bad signature, one receipt per event id,
// the overlap after a secret rotation, and listing the receipts (bad-inputs B1 for another workspace).
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
import { loginSignatureHeader, verifyLoginSignature } from '#server/apis/login/hosted-webhook.js';
import { buildShared } from '#test/helper.js';
import { bearer, signUp, type SignedUp } from '../account/support.js';

const PROBLEM = 'https://chatapp.example/problems/';
const hmac = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

function event(appId: string, id = newId('evt'), extra: Record<string, unknown> = {}) {
  const data = {
    app_id: appId,
    session_id: newId('ls'),
    phone: '+15550100202',
    profile_name: 'Ana',
    verified_at: '2026-11-23T09:31:00Z',
    verification_token: 'eyJ.a.b',
  };
  const { app_id: _appId, ...topLevel } = data; // the seed's top-level fields repeat data but app_id
  return { id, type: 'chatapp.auth.verified', created: 1795426260, data, event: 'chatapp.auth.verified', ...topLevel, ...extra };
}

describe('hosted webhook', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  let b: SignedUp;
  let hosted: { id: string; webhook_secret: string };
  beforeAll(async () => {
    app = await buildShared();
    a = await signUp(app, 'hosted-a');
    b = await signUp(app, 'hosted-b');
    hosted = (
      await app.inject({ method: 'POST', url: '/api/login/apps', headers: bearer(a.token), payload: { name: 'Hosted', webhook_destination: 'hosted' } })
    ).json();
  });

  const post = (appId: string, body: string, signature?: string, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: `/api/chatapp-auth/webhook/${appId}`,
      headers: { 'content-type': 'application/json', ...(signature ? { 'x-login-signature': signature } : {}), ...headers },
      payload: body,
    });
  const receipts = async (appId = hosted.id, owner = a) => app.inject({ url: `/api/login/apps/${appId}/webhook-receipts`, headers: bearer(owner.token) });
  const count = async () =>
    Number(
      (
        await app.platform.store.db
          .selectFrom('hosted_webhook_receipts')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('F2 a body signed with a plain HMAC-SHA256 of the raw bytes is stored once; a redelivery is a duplicate', async () => {
    // Unusual spacing and an unknown field: the raw bytes are signed, unknown fields are kept.
    const body = JSON.stringify(event(hosted.id, undefined, { future_field: 1 }), null, 3);
    const res = await post(hosted.id, body, hmac(hosted.webhook_secret, body));
    expect(res.statusCode, res.body).toBe(200);
    const ack = res.json();
    expect(ack).toEqual({ received: true, receipt_id: expect.stringMatching(/^hk_/), duplicate: false });
    const again = await post(hosted.id, body, hmac(hosted.webhook_secret, body));
    expect(again.json()).toEqual({ ...ack, duplicate: true });
    const list = (await receipts()).json();
    expect(list.data).toHaveLength(1);
    const { future_field: _unknown, ...known } = JSON.parse(body);
    expect(list.data[0]).toEqual({
      id: ack.receipt_id,
      app_id: hosted.id,
      event_id: known.id,
      event_type: 'chatapp.auth.verified',
      received_at: expect.any(String),
      payload: known,
    });
    // Kept in the store; the answer's serializer shows the contract's fields only.
    const row = await app.platform.store.db.selectFrom('hosted_webhook_receipts').select('payload').where('id', '=', ack.receipt_id).executeTakeFirstOrThrow();
    expect(row.payload).toEqual(JSON.parse(body));
  });

  it('E1/E2-style refusals: no signature, another secret, sha1, a re-serialised body, garbage: 401 invalid-signature, nothing stored', async () => {
    const body = JSON.stringify(event(hosted.id), null, 2);
    const before = await count();
    const cases = [
      undefined,
      hmac('whsec_another', body),
      `sha1=${createHmac('sha1', hosted.webhook_secret).update(body).digest('hex')}`,
      hmac(hosted.webhook_secret, JSON.stringify(JSON.parse(body))),
      'sha256=zz',
      `sha256=a,sha256=b,sha256=c,sha256=d,${hmac(hosted.webhook_secret, body)}`, // too many values
    ];
    for (const signature of cases) {
      const res = await post(hosted.id, body, signature);
      expect(res.statusCode, String(signature)).toBe(401);
      expect(res.json()).toMatchObject({ type: `${PROBLEM}invalid-signature`, status: 401 });
      expect(res.headers['www-authenticate']).toBeDefined();
      expect(res.body).not.toContain(hosted.webhook_secret);
    }
    expect(await count()).toBe(before);
  });

  it('a signature header longer than the contract allows (256 characters): 400 naming it, nothing stored', async () => {
    const body = JSON.stringify(event(hosted.id));
    const before = await count();
    const long = `${hmac('x', body)},${hmac('y', body)},${hmac('z', body)},${hmac(hosted.webhook_secret, body)}`;
    const res = await post(hosted.id, body, long);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/header/x-login-signature', detail: expect.any(String) }]);
    expect(await count()).toBe(before);
  });

  it('unknown app, or an app whose destination is not hosted: 404', async () => {
    const body = JSON.stringify(event(hosted.id));
    expect((await post(newId('app'), body, hmac(hosted.webhook_secret, body))).statusCode).toBe(404);
    const other = (await app.inject({ method: 'POST', url: '/api/login/apps', headers: bearer(a.token), payload: { name: 'Not hosted' } })).json();
    const res = await post(other.id, body, hmac(other.webhook_secret, body));
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEM}not-found`);
  });

  it('F9-style overlap: after a rotation with overlap both secrets verify (two comma-separated values), without it only the new', async () => {
    const target = (
      await app.inject({ method: 'POST', url: '/api/login/apps', headers: bearer(a.token), payload: { name: 'Rotating', webhook_destination: 'hosted' } })
    ).json();
    const old = target.webhook_secret;
    const rotated = (
      await app.inject({
        method: 'POST',
        url: `/api/login/apps/${target.id}/rotate-webhook-secret`,
        headers: bearer(a.token),
        payload: { previous_secret_valid_for: 600 },
      })
    ).json();
    /** Signs a fresh event with each secret, comma-separated, as a sender in an overlap does. */
    const send = async (...secrets: string[]) => {
      const body = JSON.stringify(event(target.id));
      return (await post(target.id, body, secrets.map((secret) => hmac(secret, body)).join(','))).statusCode;
    };
    expect(await send(old)).toBe(200);
    expect(await send(rotated.webhook_secret)).toBe(200);
    expect(await send(rotated.webhook_secret, old)).toBe(200);
    expect(await send('whsec_wrong', old)).toBe(200); // one matching value is enough
    const retired = (await app.inject({ method: 'POST', url: `/api/login/apps/${target.id}/rotate-webhook-secret`, headers: bearer(a.token) })).json();
    expect(await send(rotated.webhook_secret)).toBe(401); // bad-inputs L5: refused at once without overlap
    expect(await send(old)).toBe(401);
    expect(await send(retired.webhook_secret)).toBe(200);
  });

  it('the header our sender writes verifies with a plain HMAC, one value per secret, the new first', () => {
    const body = '{"id":"evt_1"}';
    const header = loginSignatureHeader(['whsec_new', 'whsec_old'], body);
    expect(header).toBe(`${hmac('whsec_new', body)},${hmac('whsec_old', body)}`);
    expect(verifyLoginSignature(header, ['whsec_old'], body)).toBe(true);
    expect(verifyLoginSignature(header, ['whsec_other'], body)).toBe(false);
    expect(verifyLoginSignature(undefined, ['whsec_old'], body)).toBe(false);
  });

  it('invalid bodies: schema violations 400, X-Login-Event-Id differing from the body 400, NUL 400; nothing stored', async () => {
    const before = await count();
    const missing = JSON.stringify({ id: newId('evt'), type: 'chatapp.auth.verified' });
    expect((await post(hosted.id, missing, hmac(hosted.webhook_secret, missing))).statusCode).toBe(400);
    const body = JSON.stringify(event(hosted.id));
    const mismatch = await post(hosted.id, body, hmac(hosted.webhook_secret, body), { 'x-login-event-id': newId('evt') });
    expect(mismatch.statusCode).toBe(400);
    const nul = JSON.stringify(event(hosted.id, undefined, { note: 'a\u0000b' }));
    expect((await post(hosted.id, nul, hmac(hosted.webhook_secret, nul))).statusCode).toBe(400);
    expect(await count()).toBe(before);
  });

  it('receipts: newest first with cursor pagination; B1 another workspace 404; deleting the app deletes them', async () => {
    const target = (
      await app.inject({ method: 'POST', url: '/api/login/apps', headers: bearer(a.token), payload: { name: 'Many', webhook_destination: 'hosted' } })
    ).json();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = JSON.stringify(event(target.id));
      ids.push((await post(target.id, body, hmac(target.webhook_secret, body))).json().receipt_id);
    }
    const page1 = (await app.inject({ url: `/api/login/apps/${target.id}/webhook-receipts?limit=2`, headers: bearer(a.token) })).json();
    expect(page1.data.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    const page2 = (
      await app.inject({
        url: `/api/login/apps/${target.id}/webhook-receipts?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`,
        headers: bearer(a.token),
      })
    ).json();
    expect(page2.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    // a cursor of this app's receipts is no cursor of another app's (bad-inputs B6)
    expect(
      (await app.inject({ url: `/api/login/apps/${hosted.id}/webhook-receipts?cursor=${encodeURIComponent(page1.next_cursor)}`, headers: bearer(a.token) }))
        .statusCode,
    ).toBe(400);
    const theirs = await receipts(target.id, b);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.body).not.toContain('Many');
    await app.inject({ method: 'DELETE', url: `/api/login/apps/${target.id}`, headers: bearer(a.token) });
    const left = await app.platform.store.db.selectFrom('hosted_webhook_receipts').select('id').where('app_id', '=', target.id).execute();
    expect(left).toEqual([]);
  });
});
