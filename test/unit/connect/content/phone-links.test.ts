// Links only a verified phone can open (issue 30, item 4): the link option, the viewer's
// verification step (a LOGIN message through the Login flow, on the sandbox service number),
// the refusal for another number, the file behind the same check, and the verified phone on
// reader sessions, events and unique readers.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildShared } from '#test/helper.js';
import { elapse } from '#test/support/eventually.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { LINKS, newDocument, newLink, outboxEvents, PROBLEM, schemaErrors, tenant, webhookEndpoint, type Tenant } from './support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const RECIPIENT = '+4915112345678';
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';

let app: FastifyInstance;
let a: Tenant;
let doc: { id: string };
beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app, 'phone-links');
  doc = await newDocument(app, a, { title: 'Offer for Lena' });
  await webhookEndpoint(app, a.workspaceId);
});

/** A browser: keeps the cookies the viewer sets. */
function browser() {
  const jar = new Map<string, string>();
  return {
    async get(path: string): Promise<LightMyRequestResponse> {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const res = await app.inject({ url: path, headers: { 'user-agent': DESKTOP, ...(cookie ? { cookie } : {}) } });
      for (const c of res.cookies as { name: string; value: string; maxAge?: number }[]) {
        if (c.maxAge === 0 || c.value === '') jar.delete(c.name);
        else jar.set(c.name, c.value);
      }
      return res;
    },
  };
}

/** The LOGIN message the verification page asks for, sent from `from` through the sandbox phone. */
async function sendLogin(page: string, from: string) {
  const message = /id="verify-message">([^<]+)</.exec(page)?.[1];
  const number = /id="verify-number">([^<]+)</.exec(page)?.[1];
  expect(message, page).toMatch(/^LOGIN [0-9A-Z]{8}$/);
  const pn = await app.platform.store.db.selectFrom('phone_numbers').select('id').where('display_phone_number', '=', number!).executeTakeFirstOrThrow();
  await sendFromSandboxPhone(app, { phoneNumberId: pn.id, from, text: message! });
  await elapse(150, 'verification runs in the inbound transaction');
}

const events = async (linkId: string) => (await outboxEvents(app, a.workspaceId, 'link.opened')).filter((e) => e.data.link.id === linkId);

describe('links only a verified phone can open', () => {
  it('create: require_phone_verification is stored and answered; without recipient.phone 400 naming it', async () => {
    const link = await newLink(app, a, doc.id, { recipient: { phone: RECIPIENT }, require_phone_verification: true });
    expect(link).toMatchObject({ require_phone_verification: true, recipient: { phone: RECIPIENT } });
    expect((await newLink(app, a, doc.id)).require_phone_verification).toBe(false);
    const res = await app.inject({
      method: 'POST',
      url: LINKS,
      headers: a.auth,
      payload: { document_id: doc.id, external_id: 'crm-nophone', recipient: { email: 'lena@example.com' }, require_phone_verification: true },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: `${PROBLEM}validation`, errors: [{ pointer: '/body/require_phone_verification' }] });
  });

  it('the viewer asks for the LOGIN message first; the file is refused until then; the recipient’s number opens it', async () => {
    const link = await newLink(app, a, doc.id, { recipient: { phone: RECIPIENT }, require_phone_verification: true });
    const path = new URL(link.url).pathname;
    const reader = browser();
    const first = await reader.get(path);
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('Verify your phone to open this document');
    expect(first.body).not.toContain('Offer for Lena'); // nothing of the document before verification
    expect(first.body).toMatch(/<img id="verify-qr" src="data:image\/svg\+xml;base64,/);
    expect(first.body).toMatch(/href="https:\/\/wa\.me\/\d+\?text=LOGIN%20[0-9A-Z]{8}"/);
    expect(first.body).toContain('/sandbox/phone?');
    expect(first.body).not.toContain('<script');
    // Reloading keeps the same Login session (the same message).
    const again = await reader.get(path);
    expect(/id="verify-message">([^<]+)</.exec(again.body)![1]).toBe(/id="verify-message">([^<]+)</.exec(first.body)![1]);
    expect((await reader.get(`${path}/file`)).statusCode).toBe(403);
    expect(await events(link.id)).toEqual([]);

    await sendLogin(first.body, RECIPIENT);
    const opened = await reader.get(path);
    expect(opened.statusCode, opened.body).toBe(200);
    expect(opened.body).toContain('data-kind="pdf"');
    expect(opened.body).toContain('Offer for Lena');
    expect((await reader.get(`${path}/file`)).statusCode).toBe(200);
    const [event] = await events(link.id);
    expect(event.data.session.verified_phone).toBe(RECIPIENT);
    expect(await schemaErrors('LinkOpenedEvent', event)).toEqual([]);
    const sessions = await app.inject({ url: `/api/connect/links/${link.id}/sessions`, headers: a.auth });
    expect(sessions.statusCode, sessions.body).toBe(200);
    expect(sessions.json().data[0].verified_phone).toBe(RECIPIENT);
    const row = await app.platform.store.db.selectFrom('reader_sessions').select('verified_phone').where('link_id', '=', link.id).executeTakeFirstOrThrow();
    expect(row.verified_phone).toBe(RECIPIENT);
  });

  it('another number is refused clearly, nothing opens; "verify another number" starts over', async () => {
    const link = await newLink(app, a, doc.id, { recipient: { phone: RECIPIENT }, require_phone_verification: true });
    const path = new URL(link.url).pathname;
    const reader = browser();
    const page = await reader.get(path);
    await sendLogin(page.body, '+15550100999');
    const refused = await reader.get(path);
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain('This document was sent to another number');
    expect(refused.body).toContain('+15550100999');
    expect(refused.body).not.toContain(RECIPIENT);
    expect(refused.body).not.toContain('Offer for Lena');
    expect((await reader.get(`${path}/file`)).statusCode).toBe(403);
    expect(await events(link.id)).toEqual([]);
    const back = await reader.get(`${path}?retry=1`);
    expect(back.statusCode).toBe(303);
    expect(back.headers.location).toBe(path);
    const retry = await reader.get(path);
    expect(retry.statusCode).toBe(200);
    expect(/id="verify-message">([^<]+)</.exec(retry.body)![1]).not.toBe(/id="verify-message">([^<]+)</.exec(page.body)![1]);
  });

  it('unique readers count verified people: two browsers of one verified phone are one reader', async () => {
    const link = await newLink(app, a, doc.id, { recipient: { phone: RECIPIENT }, require_phone_verification: true });
    const path = new URL(link.url).pathname;
    for (let i = 0; i < 2; i++) {
      const reader = browser();
      await sendLogin((await reader.get(path)).body, RECIPIENT);
      expect((await reader.get(path)).body).toContain('data-kind="pdf"');
    }
    const res = await app.inject({ url: `/api/connect/links/${link.id}/analytics`, headers: a.auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ views: 2, unique_readers: 1 });
  });

  it('the workspace’s Verified links app is not among the owner’s Login apps', async () => {
    const row = await app.platform.store.db
      .selectFrom('login_apps')
      .select('id')
      .where('workspace_id', '=', a.workspaceId)
      .where('purpose', '=', 'verified_links')
      .executeTakeFirst();
    expect(row).toBeTruthy();
    const owner = { authorization: `Bearer ${a.token}` };
    const list = await app.inject({ url: '/api/login/apps', headers: owner });
    expect(list.statusCode, list.body).toBe(200);
    expect(JSON.stringify(list.json())).not.toContain(row!.id);
    expect((await app.inject({ url: `/api/login/apps/${row!.id}`, headers: owner })).statusCode).toBe(404);
  });
});
