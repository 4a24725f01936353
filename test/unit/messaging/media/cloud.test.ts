// Media from the device against the fake Cloud API: the Graph upload Meta receives (multipart
// with messaging_product, type and the file, bearer token), the send by media id, and Meta's
// failures on the upload (131053, rate limit, bad token) leaving no row (and no message).
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_TOKEN, FakeProvider } from '#test/fakes/fake-provider.js';
import { ProviderError } from '#server/providers/types.js';
import { cloudCustomerWrote, cloudTenant, counts, PROBLEMS, type Tenant } from '../inbox/support.js';
import { FILES, multipart, type FilePartSpec } from './support.js';

const CUSTOMER = '+4915112345678';
let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
  t = await cloudTenant(app);
  await cloudCustomerWrote(app, t, CUSTOMER);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const png: FilePartSpec = { filename: 'card-1.png', type: 'image/png', bytes: FILES.png(1000) };
const post = (url: string, fields: Record<string, string>, files: FilePartSpec[] = [png]) => {
  const form = multipart(fields, files);
  return app.inject({ method: 'POST', url, headers: { ...t.headers, ...form.headers }, payload: form.payload });
};
const upload = (files?: FilePartSpec[]) => post('/api/chatapp/media', { chatapp_phone_number: t.number }, files);
const send = (fields: Record<string, string>, files?: FilePartSpec[]) =>
  post('/api/chatapp/send', { contact_no: CUSTOMER, chatapp_phone_number: t.number, ...fields }, files);
const mediaCalls = () => fake.requests.filter((r) => r.path === `/${t.providerPnId}/media`);
const messageCalls = () => fake.requests.filter((r) => r.path.endsWith('/messages'));
const uploads = async () =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('uploaded_media')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('uploadMedia on the Cloud API', () => {
  it("POST /{phone-number-id}/media as multipart: messaging_product, type, the file's bytes; bearer token; the id answered", async () => {
    const res = await upload();
    expect(res.statusCode, res.body).toBe(201);
    expect(mediaCalls()).toHaveLength(1);
    const call = mediaCalls()[0]!;
    expect(call.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(call.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(call.body).toMatchObject({ messaging_product: 'whatsapp', type: 'image/png', file: { filename: 'card-1.png', type: 'image/png', size: 1000 } });
    expect(Buffer.compare(call.body.file.bytes, png.bytes)).toBe(0);
    expect(res.json().provider_media_id).toBe([...fake.uploads.keys()].at(-1));
  });

  it('131053 media upload error: 422 with the provider code; no row', async () => {
    const before = await uploads();
    fake.fail('media-upload-error', { path: /\/media$/ });
    const res = await upload();
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, provider_code: 131053 });
    expect(await uploads()).toBe(before);
  });

  it('rate limited on the upload: 429 with Retry-After; no row', async () => {
    const before = await uploads();
    fake.fail('rate-limit', { path: /\/media$/, retryAfterSec: 30 });
    const res = await upload();
    expect(res.statusCode, res.body).toBe(429);
    expect(res.headers['retry-after']).toBe('30');
    expect(res.json().provider_code).toBe(130429);
    expect(await uploads()).toBe(before);
  });

  it('the stored token refused (190): 502 provider-error; no row', async () => {
    const before = await uploads();
    fake.fail('auth', { path: /\/media$/ });
    const res = await upload();
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, provider_code: 190 });
    expect(await uploads()).toBe(before);
  });

  it('I1 a refused file never reaches the provider', async () => {
    const res = await upload([{ ...png, bytes: FILES.html() }]);
    expect(res.statusCode).toBe(415);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('sendMessage from the device on the Cloud API', () => {
  it('uploads, then sends {image: {id, caption}} to /messages', async () => {
    const res = await send({ messageType: 'image', message: 'New in' });
    expect(res.statusCode, res.body).toBe(201);
    expect(fake.requests.map((r) => r.path)).toEqual([`/${t.providerPnId}/media`, `/${t.providerPnId}/messages`]);
    const id = [...fake.uploads.keys()].at(-1);
    expect(messageCalls()[0]!.body).toMatchObject({ messaging_product: 'whatsapp', to: CUSTOMER.slice(1), type: 'image', image: { id, caption: 'New in' } });
    expect(messageCalls()[0]!.body.image.link).toBeUndefined();
  });

  it('a document keeps its file name in the send', async () => {
    const res = await send({ messageType: 'document', filename: 'spec-sheet.pdf' }, [{ filename: 'x.pdf', type: 'application/pdf', bytes: FILES.pdf() }]);
    expect(res.statusCode, res.body).toBe(201);
    expect(messageCalls()[0]!.body.document).toMatchObject({ filename: 'spec-sheet.pdf' });
    expect(mediaCalls()[0]!.body.type).toBe('application/pdf');
  });

  it('131053 on the upload: 422, no message row and no send', async () => {
    const before = await counts(app);
    fake.fail('media-upload-error', { path: /\/media$/ });
    const res = await send({ messageType: 'image' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().provider_code).toBe(131053);
    expect(messageCalls()).toHaveLength(0);
    expect(await counts(app)).toEqual(before);
  });

  it('rate limited on the upload: 429, nothing sent', async () => {
    fake.fail('rate-limit', { path: /\/media$/, retryAfterSec: 30 });
    const res = await send({ messageType: 'image' });
    expect(res.statusCode, res.body).toBe(429);
    expect(messageCalls()).toHaveLength(0);
  });

  it('an upload that timed out: 504, nothing stored; the same Idempotency-Key may try again (nothing was sent)', async () => {
    const before = await counts(app);
    const spy = vi
      .spyOn(app.platform.provider('cloud_api'), 'uploadMedia')
      .mockRejectedValueOnce(new ProviderError({ kind: 'timeout', message: 'The provider did not answer in time.' }));
    const key = `upload-timeout-${Date.now()}`;
    const form = multipart({ contact_no: CUSTOMER, chatapp_phone_number: t.number, messageType: 'image' }, [png]);
    const first = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: { ...t.headers, ...form.headers, 'idempotency-key': key },
      payload: form.payload,
    });
    expect(first.statusCode, first.body).toBe(504);
    expect(messageCalls()).toHaveLength(0);
    const { send_idempotency: _, ...rest } = await counts(app);
    const { send_idempotency: __, ...restBefore } = before;
    expect(rest).toEqual(restBefore);
    spy.mockRestore();
    const again = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: { ...t.headers, ...form.headers, 'idempotency-key': key },
      payload: form.payload,
    });
    expect(again.statusCode, again.body).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(messageCalls()).toHaveLength(1);
  });

  it('H15 outside the window: 422 and 0 requests to the provider', async () => {
    const res = await send({ messageType: 'image', contact_no: '+4915187654321' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}outside-window`);
    expect(fake.requests).toHaveLength(0);
  });
});
