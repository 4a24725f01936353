// POST /api/chatapp/send with JSON naming an upload's `media_id` (issue 31): the way a generated
// client sends media from the device, as the provider's API does (upload, then send by id). The
// wire message carries the provider's media id; exactly one of mediaUrl and media_id (400);
// another workspace's id is 404 like an unknown one (bad-inputs B1); a wrong-kind upload is 422
// naming media_id; nothing stored and no provider call on a refusal.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { cloudCustomerWrote, cloudTenant, counts, PROBLEMS, tenant, type Tenant } from '../inbox/support.js';
import { FILES, multipart } from './support.js';

const CUSTOMER = '+4915112345678';
let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;
let other: Tenant;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  t = await cloudTenant(app);
  other = await tenant(app);
  await cloudCustomerWrote(app, t, CUSTOMER);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

async function upload(tenantOf: Tenant, file = { filename: 'photo.jpg', type: 'image/jpeg', bytes: FILES.jpeg(2048) }) {
  const form = multipart({ chatapp_phone_number: tenantOf.number }, [file]);
  const res = await app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { ...tenantOf.headers, ...form.headers }, payload: form.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; provider_media_id: string };
}
const send = (body: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/chatapp/send', headers: t.headers, payload: { contact_no: CUSTOMER, chatapp_phone_number: t.number, ...body } });
const wire = () => fake.requests.filter((r) => r.path.endsWith('/messages'));

describe('a JSON send by media_id', () => {
  it('image: 201; the provider gets its media id and the caption, the message shows the upload', async () => {
    const up = await upload(t);
    fake.reset();
    const res = await send({ messageType: 'image', media_id: up.id, message: 'Here it is in blue.' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ messageType: 'image', status: 'accepted' });
    expect(wire()).toHaveLength(1);
    expect(wire()[0]!.body).toMatchObject({ type: 'image', image: { id: up.provider_media_id, caption: 'Here it is in blue.' } });
    const row = await app.platform.store.db.selectFrom('messages').select('content').where('id', '=', res.json().id).executeTakeFirstOrThrow();
    expect(row.content).toMatchObject({ media: { media_id: up.id, mime_type: 'image/jpeg' } });
  });

  it("document: the upload's file name unless the send names one", async () => {
    const up = await upload(t, { filename: 'inv.pdf', type: 'application/pdf', bytes: FILES.pdf(900) });
    fake.reset();
    expect((await send({ messageType: 'document', media_id: up.id })).statusCode).toBe(201);
    expect((await send({ messageType: 'document', media_id: up.id, filename: 'Invoice 1042.pdf' })).statusCode).toBe(201);
    expect(wire().map((r) => r.body.document)).toEqual([
      { id: up.provider_media_id, filename: 'inv.pdf' },
      { id: up.provider_media_id, filename: 'Invoice 1042.pdf' },
    ]);
  });

  it('H14 both mediaUrl and media_id, or neither: 400 naming the field; nothing stored, no provider call', async () => {
    const up = await upload(t);
    fake.reset();
    const before = await counts(app);
    const both = await send({ messageType: 'image', media_id: up.id, mediaUrl: 'https://cdn.example.com/a.jpg' });
    expect(both.statusCode, both.body).toBe(400);
    expect(both.json().errors).toEqual([{ pointer: '/body/media_id', detail: 'Give exactly one of mediaUrl and media_id.' }]);
    const neither = await send({ messageType: 'audio' });
    expect(neither.statusCode, neither.body).toBe(400);
    expect(neither.json().errors[0].pointer).toBe('/body/mediaUrl');
    expect(await counts(app)).toEqual(before);
    expect(fake.requests).toHaveLength(0);
  });

  it("B1 another workspace's media_id: 404, the same answer as an unknown id; nothing stored, no provider call", async () => {
    const foreign = await upload(other);
    fake.reset();
    const before = await counts(app);
    const res = await send({ messageType: 'image', media_id: foreign.id });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}not-found`, errors: [{ pointer: '/body/media_id' }] });
    const unknown = await send({ messageType: 'image', media_id: 'med_00000000000000000000' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail.replace('med_00000000000000000000', 'X')).toBe(res.json().detail.replace(foreign.id, 'X'));
    expect(await counts(app)).toEqual(before);
    expect(fake.requests).toHaveLength(0);
  });

  it('a PDF upload sent as an image: 422 naming media_id, no provider call', async () => {
    const pdf = await upload(t, { filename: 'a.pdf', type: 'application/pdf', bytes: FILES.pdf(500) });
    fake.reset();
    const res = await send({ messageType: 'image', media_id: pdf.id });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/media_id');
    expect(fake.requests).toHaveLength(0);
  });
});
