// Uploaded media as template headers (issue 8). POST /api/chatapp/send with `header.media_id`
// (and media carousel cards) goes out on the fake Cloud API by the provider's media id; another
// workspace's id is 404 like an unknown one (bad-inputs B1); another number's, an expired or a wrong-kind
// upload is 422 naming the field, with nothing stored and no provider call. Campaign create
// refuses another number's upload up front (422) instead of failing at send time.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { newId } from '#server/lib/ids.js';
import { addSandboxNumber } from '#server/providers/sandbox.js';
import { call, workspace, type Workspace } from '../campaigns/support.js';
import { cloudTenant, counts, PROBLEMS, storeTemplate, tenant, type Tenant } from '../inbox/support.js';
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
  await storeTemplate(app, t, {
    name: 'promo_image',
    category: 'MARKETING',
    components: [
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Hi {{1}}, new in.' },
    ],
  });
  await storeTemplate(app, t, {
    name: 'invoice_doc',
    components: [
      { type: 'HEADER', format: 'DOCUMENT' },
      { type: 'BODY', text: 'Your invoice.' },
    ],
  });
  const card = {
    components: [
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Only {{1}}' },
    ],
  };
  await storeTemplate(app, t, {
    name: 'two_cards',
    category: 'MARKETING',
    components: [
      { type: 'BODY', text: 'New arrivals' },
      { type: 'CAROUSEL', cards: [card, card] },
    ],
  });
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

async function upload(
  tenantOf: { headers: Record<string, string> },
  number: string,
  file = { filename: 'photo.jpg', type: 'image/jpeg', bytes: FILES.jpeg(2048) },
) {
  const form = multipart({ chatapp_phone_number: number }, [file]);
  const res = await app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { ...tenantOf.headers, ...form.headers }, payload: form.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; provider_media_id: string };
}
const send = (template: Record<string, unknown>) =>
  app.inject({
    method: 'POST',
    url: '/api/chatapp/send',
    headers: t.headers,
    payload: { contact_no: CUSTOMER, chatapp_phone_number: t.number, messageType: 'template', template: { language: 'en_US', ...template } },
  });
const wire = () => fake.requests.filter((r) => r.path.endsWith('/messages') || r.path.endsWith('/marketing_messages'));
const image = (media_id: string) => ({ name: 'promo_image', header: { type: 'image', media_id }, body: ['Lena'] });

describe('template send with an uploaded header', () => {
  it('header.media_id: 201; the wire body carries the provider media id', async () => {
    const up = await upload(t, t.number);
    fake.reset();
    const res = await send(image(up.id));
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()).toHaveLength(1);
    expect(wire()[0]!.body.template.components).toEqual([
      { type: 'header', parameters: [{ type: 'image', image: { id: up.provider_media_id } }] },
      { type: 'body', parameters: [{ type: 'text', text: 'Lena' }] },
    ]);
  });

  it('a document header by media_id keeps its filename', async () => {
    const up = await upload(t, t.number, { filename: 'inv.pdf', type: 'application/pdf', bytes: FILES.pdf(900) });
    fake.reset();
    const res = await send({ name: 'invoice_doc', header: { type: 'document', media_id: up.id, filename: 'Invoice 1042.pdf' } });
    expect(res.statusCode, res.body).toBe(201);
    expect(wire()[0]!.body.template.components[0]).toEqual({
      type: 'header',
      parameters: [{ type: 'document', document: { id: up.provider_media_id, filename: 'Invoice 1042.pdf' } }],
    });
  });

  it('media carousel cards by media_id: each card by its provider id', async () => {
    const cards = [await upload(t, t.number), await upload(t, t.number, { filename: 'b.png', type: 'image/png', bytes: FILES.png(1500) })];
    fake.reset();
    const res = await send({
      name: 'two_cards',
      carousel: { type: 'media', cards: cards.map((c, i) => ({ header: { type: 'image', media_id: c.id }, body: [`$${79 + i}`] })) },
    });
    expect(res.statusCode, res.body).toBe(201);
    const carousel = wire()[0]!.body.template.components.find((c: { type: string }) => c.type === 'carousel');
    expect(carousel.cards.map((card: any) => card.components[0].parameters[0])).toEqual(
      cards.map((c) => ({ type: 'image', image: { id: c.provider_media_id } })),
    );
  });

  it("B1 another workspace's media_id: 404, the same body as an unknown id; nothing stored, no provider call", async () => {
    const foreign = await upload(other, other.number);
    fake.reset();
    const before = await counts(app);
    const res = await send(image(foreign.id));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}not-found`, errors: [{ pointer: '/body/template/header/media_id' }] });
    const unknown = await send(image('med_00000000000000000000'));
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail.replace('med_00000000000000000000', 'X')).toBe(res.json().detail.replace(foreign.id, 'X'));
    expect(await counts(app)).toEqual(before);
    expect(fake.requests).toHaveLength(0);
  });

  it('an upload of another number of the workspace: 422 naming header.media_id; nothing stored, no provider call', async () => {
    const second = await addSandboxNumber(app.platform.store.db, { id: t.wabaId, workspace_id: t.workspaceId, name: 'Acme' });
    const id = newId('med');
    await app.platform.store.db
      .insertInto('uploaded_media')
      .values({ id, workspace_id: t.workspaceId, phone_number_id: second.id, provider_media_id: '555000111', mime_type: 'image/jpeg', size_bytes: 10 })
      .execute();
    const before = await counts(app);
    const res = await send(image(id));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual([{ pointer: '/body/template/header/media_id', detail: 'uploaded for another sender number' }]);
    expect(await counts(app)).toEqual(before);
    expect(fake.requests).toHaveLength(0);
  });

  it('an expired upload: 422 naming header.media_id', async () => {
    const up = await upload(t, t.number);
    await app.platform.store.db
      .updateTable('uploaded_media')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', up.id)
      .execute();
    fake.reset();
    const res = await send(image(up.id));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual([{ pointer: '/body/template/header/media_id', detail: 'expired' }]);
    expect(fake.requests).toHaveLength(0);
  });

  it('an expired upload on a carousel card: 422 naming that card', async () => {
    const good = await upload(t, t.number);
    const old = await upload(t, t.number);
    await app.platform.store.db
      .updateTable('uploaded_media')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', old.id)
      .execute();
    const res = await send({
      name: 'two_cards',
      carousel: { type: 'media', cards: [good, old].map((c) => ({ header: { type: 'image', media_id: c.id }, body: ['$1'] })) },
    });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual([{ pointer: '/body/template/carousel/cards/1/header/media_id', detail: 'expired' }]);
  });

  it('a PDF upload as an image header: 422 naming header.media_id', async () => {
    const pdf = await upload(t, t.number, { filename: 'a.pdf', type: 'application/pdf', bytes: FILES.pdf(500) });
    fake.reset();
    const res = await send(image(pdf.id));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0]).toMatchObject({ pointer: '/body/template/header/media_id', detail: 'application/pdf is not a image header type' });
    expect(fake.requests).toHaveLength(0);
  });

  it('H14 both media_url and media_id, or neither: 400 naming the header', async () => {
    const up = await upload(t, t.number);
    const both = await send({ name: 'promo_image', header: { type: 'image', media_id: up.id, media_url: 'https://cdn.example.com/a.jpg' }, body: ['Lena'] });
    expect(both.statusCode, both.body).toBe(400);
    expect(both.json().errors[0].pointer).toBe('/body/template/header');
    const neither = await send({ name: 'promo_image', header: { type: 'image' }, body: ['Lena'] });
    expect(neither.statusCode, neither.body).toBe(400);
  });
});

describe('campaign create with uploaded media', () => {
  let w: Workspace;
  let second: { id: string; display_phone_number: string };
  beforeAll(async () => {
    w = await workspace(app);
    second = await addSandboxNumber(app.platform.store.db, { id: w.accountId, workspace_id: w.workspaceId, name: 'Acme' });
  });
  const campaign = (mediaId: string) => ({
    name: 'Flash sale',
    chatapp_phone_number: w.phone,
    audience: { type: 'all_contacts' },
    draft: true,
    template: { name: 'flash_sale', language: 'en_US', header: { type: 'image', media_id: mediaId }, body: ['there'] },
  });
  const count = async () => (await call(app, w.key)('GET', '/api/campaigns?limit=100')).json().data.length;

  it('an upload of another number of the workspace: 422 at create naming header.media_id; nothing created', async () => {
    const foreign = await upload({ headers: { 'x-api-key': w.key } }, second.display_phone_number);
    const before = await count();
    const res = await call(app, w.key)('POST', '/api/campaigns', campaign(foreign.id));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual([{ pointer: '/body/template/header/media_id', detail: 'uploaded for another sender number' }]);
    expect(await count()).toBe(before);
  });

  it("the sender's own upload is accepted", async () => {
    const mine = await upload({ headers: { 'x-api-key': w.key } }, w.phone);
    const res = await call(app, w.key)('POST', '/api/campaigns', campaign(mine.id));
    expect(res.statusCode, res.body).toBe(201);
  });
});
