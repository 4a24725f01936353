// getMessageMedia: the file of an inbound medium. On the Cloud API (the fake provider on
// 127.0.0.1): Meta's image example arrives signed, the download resolves the media id
// (`GET /{media-id}`), fetches the URL with the bearer token and streams the bytes with their type;
// a second download comes from the cache in DATA_DIR. On the sandbox: the bytes its phone sent.
// Refusals: another workspace's or a non-media message (404), a file over the limit (413), the
// provider failing or answering a URL off its hosts (502, the token never sent there).
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FakeProvider } from '#test/fakes/fake-provider.js';
import { sha256Header } from '#server/lib/signatures.js';
import { cloudTenant, PROBLEMS, sandbox, tenant, type Tenant } from '../inbox/support.js';

const LIMIT = 4096;
const IMAGE = JSON.parse(
  JSON.stringify({
    from: '16505551234',
    id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
    timestamp: '1744344496',
    type: 'image',
    image: { caption: 'Taj Mahal', mime_type: 'image/jpeg', sha256: 'SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=', id: '1003383421387256' },
  }),
);

let fake: FakeProvider;
let app: FastifyInstance;
let cloud: Tenant;
let other: Tenant;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, MEDIA_DOWNLOAD_MAX_BYTES: String(LIMIT) } });
  cloud = await cloudTenant(app);
  other = await tenant(app);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** Meta's image example from the customer, its media id `mediaId`, posted signed to the webhook; our message id. */
async function customerSendsImage(mediaId: string, kind = 'image', mime = 'image/jpeg') {
  const message = { ...IMAGE, id: `wamid.${randomBytes(12).toString('hex')}`, timestamp: String(Math.floor(Date.now() / 1000)), type: kind };
  delete message.image;
  message[kind] = { ...IMAGE.image, id: mediaId, mime_type: mime };
  const raw = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550100100', phone_number_id: FAKE_PHONE_NUMBER_ID },
              contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
              messages: [message],
            },
          },
        ],
      },
    ],
  });
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhook/chatapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, raw) },
    payload: raw,
  });
  expect(res.statusCode).toBe(200);
  const row = await app.platform.store.db.selectFrom('messages').select('id').where('provider_message_id', '=', message.id).executeTakeFirstOrThrow();
  return row.id;
}

const download = (t: Tenant, id: string) => app.inject({ method: 'GET', url: `/api/chatapp/messages/${id}/media`, headers: t.headers });
const graphCalls = () => fake.requests.filter((r) => r.method === 'GET');

function expectProblem(res: Awaited<ReturnType<typeof download>>, status: number, type: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().type).toBe(`${PROBLEMS}${type}`);
  expect(res.body).not.toContain(FAKE_TOKEN);
}

describe('getMessageMedia on the Cloud API (fake provider)', () => {
  it("resolves the media id, fetches its URL with the token, streams the bytes with their type; the second download is the cache's", async () => {
    const bytes = randomBytes(3000);
    fake.inboundMedia.set('1003383421387256', { type: 'image/jpeg', bytes });
    const id = await customerSendsImage('1003383421387256');
    const res = await download(cloud, id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('image/jpeg');
    expect(res.headers['content-length']).toBe('3000');
    expect(res.headers['content-disposition']).toBe('attachment');
    expect(Buffer.compare(res.rawPayload, bytes)).toBe(0);
    const [meta, file] = graphCalls();
    expect(meta).toMatchObject({ path: '/1003383421387256', query: { phone_number_id: FAKE_PHONE_NUMBER_ID } });
    expect(meta!.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(file).toMatchObject({ path: '/whatsapp_business/attachments/', query: { mid: '1003383421387256' } });
    expect(file!.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    const cacheDir = join(app.config.dataDir, 'media-cache');
    expect(readdirSync(cacheDir).filter((n) => !n.endsWith('.json'))).toHaveLength(1);

    fake.reset();
    const again = await download(cloud, id);
    expect(again.statusCode).toBe(200);
    expect(Buffer.compare(again.rawPayload, bytes)).toBe(0);
    expect(graphCalls()).toEqual([]);
  });

  it('a document keeps its name for the download', async () => {
    fake.inboundMedia.set('1003383421387259', { type: 'application/pdf', bytes: Buffer.from('%PDF-1.4\n%%EOF\n') });
    const id = await customerSendsImage('1003383421387259', 'document', 'application/pdf');
    await app.platform.store.db
      .updateTable('messages')
      .set({
        content: JSON.stringify({ caption: 'receipt', media: { mime_type: 'application/pdf', filename: 'reçu 1.pdf', provider_media_id: '1003383421387259' } }),
      })
      .where('id', '=', id)
      .execute();
    const res = await download(cloud, id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe("attachment; filename*=UTF-8''re%C3%A7u%201.pdf");
  });

  it('another workspace, an outbound or a text message, an unknown id: 404, no provider call', async () => {
    fake.inboundMedia.set('1003383421387270', { type: 'image/jpeg', bytes: randomBytes(10) });
    const id = await customerSendsImage('1003383421387270');
    expectProblem(await download(other, id), 404, 'not-found');
    const text = await app.platform.store.db
      .updateTable('messages')
      .set({ type: 'text', content: JSON.stringify({ text: 'hi' }) })
      .where('id', '=', await customerSendsImage('1003383421387271'))
      .returning('id')
      .executeTakeFirstOrThrow();
    expectProblem(await download(cloud, text.id), 404, 'not-found');
    expectProblem(await download(cloud, 'msg_0000000000000000'), 404, 'not-found');
    expect(graphCalls()).toEqual([]);
    const bad = await download(cloud, 'not an id');
    expect(bad.statusCode).toBe(400);
  });

  it('a file over the download limit: 413 from the declared size, before the file is fetched; nothing cached', async () => {
    fake.inboundMedia.set('1003383421387280', { type: 'video/mp4', bytes: randomBytes(LIMIT + 1) });
    const id = await customerSendsImage('1003383421387280', 'video', 'video/mp4');
    const before = readdirSync(join(app.config.dataDir, 'media-cache')).length;
    expectProblem(await download(cloud, id), 413, 'payload-too-large');
    expect(graphCalls().map((c) => c.path)).toEqual(['/1003383421387280']);
    expect(readdirSync(join(app.config.dataDir, 'media-cache'))).toHaveLength(before);
  });

  it('the provider failing (5xx after retries, an expired token, an unknown media id): 502 with its code', async () => {
    fake.inboundMedia.set('1003383421387290', { type: 'image/jpeg', bytes: randomBytes(10) });
    const id = await customerSendsImage('1003383421387290');
    fake.fail('server-error', { path: /^\/1003383421387290$/, times: 10 });
    const failed = await download(cloud, id);
    expectProblem(failed, 502, 'provider-error');
    expect(failed.json().provider_code).toBe(2);
    fake.reset();
    fake.fail('auth', { path: /^\/whatsapp_business\/attachments\/$/ });
    expectProblem(await download(cloud, id), 502, 'provider-error');
    const unknown = await customerSendsImage('1003383421387999');
    expectProblem(await download(cloud, unknown), 502, 'provider-error');
  });

  it('a media URL off the provider’s hosts: 502, and the token is never sent there', async () => {
    fake.inboundMedia.set('1003383421387300', { type: 'image/jpeg', bytes: randomBytes(10) });
    const id = await customerSendsImage('1003383421387300');
    for (const url of ['http://169.254.169.254/latest/meta-data', 'https://evil.example/x.jpg', 'http://lookaside.fbsbx.com/x', 'not a url']) {
      fake.fail({ status: 200, body: { url, mime_type: 'image/jpeg', id: '1003383421387300' } }, { path: /^\/1003383421387300$/ });
      expectProblem(await download(cloud, id), 502, 'provider-error');
    }
  });
});

describe('getMessageMedia on the sandbox', () => {
  it('the bytes the simulated phone sent, with their type; another workspace gets 404', async () => {
    const t = await tenant(app);
    const bytes = randomBytes(2048);
    const sent = await sandbox(app).simulateInbound({
      phoneNumberId: t.providerPnId,
      from: '+4915112345678',
      message: { type: 'image', media: { mime_type: 'image/png', caption: 'my photo' }, bytes },
    });
    const row = await app.platform.store.db
      .selectFrom('messages')
      .select(['id', 'content'])
      .where('provider_message_id', '=', sent.providerMessageId)
      .executeTakeFirstOrThrow();
    // The provider gives the digest in base64; the API shows it in hex, as uploads do.
    const hex = createHash('sha256').update(bytes).digest('hex');
    expect(row.content).toMatchObject({ caption: 'my photo', media: { mime_type: 'image/png', sha256: hex } });
    const res = await download(t, row.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(Buffer.compare(res.rawPayload, bytes)).toBe(0);
    expectProblem(await download(other, row.id), 404, 'not-found');
    expect(existsSync(join(app.config.dataDir, 'media-cache'))).toBe(true);
  });
});
