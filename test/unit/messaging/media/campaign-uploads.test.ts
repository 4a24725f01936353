// "Media carousel from uploads": cards whose media are files uploaded with POST /api/chatapp/media,
// end to end through the campaign worker, on the sandbox (which checks every media id it is sent)
// and on the fake Cloud API (the wire body carries the provider's ids). Another workspace's media
// id is unknown (bad-inputs B1); an upload of another number or an expired one is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { addContacts, call, connectFakeCloud, until, workspace, type Workspace } from '../campaigns/support.js';
import { tenant } from '../inbox/support.js';
import { checkMedia } from '#server/apis/messaging/campaigns/validate.js';
import type { HttpProblem } from '#server/lib/problems.js';
import { FILES, multipart } from './support.js';

const fake = new FakeProvider();
let app: FastifyInstance;
let w: Workspace;
let cloud: Workspace;

beforeAll(async () => {
  await fake.start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  w = await workspace(app);
  cloud = await connectFakeCloud(app, w, { phoneNumberId: FAKE_PHONE_NUMBER_ID, wabaId: FAKE_WABA_ID, token: FAKE_TOKEN, display: '+15550100100' });
  await addContacts(app.platform.store.db, w.workspaceId, 2);
}, 240_000);
afterAll(() => fake.stop());

async function uploadFor(ws: Workspace, number: string, bytes = FILES.jpeg()) {
  const form = multipart({ chatapp_phone_number: number }, [{ filename: 'card', type: 'application/octet-stream', bytes }]);
  const res = await app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { 'x-api-key': ws.key, ...form.headers }, payload: form.payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; provider_media_id: string };
}

const campaign = (number: string, mediaIds: string[]) => ({
  name: 'New arrivals (uploaded photos)',
  chatapp_phone_number: number,
  audience: { type: 'all_contacts' },
  template: {
    name: 'new_arrivals',
    language: 'en_US',
    body: [{ from_contact: 'name', fallback: 'there' }],
    carousel: { type: 'media', cards: mediaIds.map((media_id, i) => ({ header: { type: 'image', media_id }, body: [`$${79 + i}`] })) },
  },
});

const status = async (id: string) => (await call(app, w.key)('GET', `/api/campaigns/${id}`)).json();

describe('media carousel from uploads', () => {
  it('sandbox: two uploads as cards; every recipient accepted (the sandbox knows each id)', async () => {
    const cards = [await uploadFor(w, w.phone), await uploadFor(w, w.phone, FILES.png())];
    const res = await call(app, w.key)(
      'POST',
      '/api/campaigns',
      campaign(
        w.phone,
        cards.map((c) => c.id),
      ),
    );
    expect(res.statusCode, res.body).toBe(201);
    const done = await until(
      async () => {
        const c = await status(res.json().id);
        return c.status === 'completed' && c;
      },
      15_000,
      'completion',
    );
    expect(done.progress.failed).toBe(0);
    expect(done.progress.total).toBe(2);
  });

  it("Cloud API: the carousel cards carry the uploaded media by the provider's id", async () => {
    fake.reset();
    const cards = [await uploadFor(cloud, cloud.phone), await uploadFor(cloud, cloud.phone)];
    const res = await call(app, w.key)(
      'POST',
      '/api/campaigns',
      campaign(
        cloud.phone,
        cards.map((c) => c.id),
      ),
    );
    expect(res.statusCode, res.body).toBe(201);
    await until(async () => (await status(res.json().id)).status === 'completed', 15_000, 'completion');
    const sends = fake.requests.filter((r) => r.path.endsWith('/messages') || r.path.endsWith('/marketing_messages'));
    expect(sends).toHaveLength(2);
    const carousel = sends[0]!.body.template.components.find((c: { type: string }) => c.type === 'carousel');
    expect(carousel.cards.map((card: any) => card.components.find((c: any) => c.type === 'header').parameters[0])).toEqual(
      cards.map((c) => ({ type: 'image', image: { id: c.provider_media_id } })),
    );
  });

  it('B1 a media id of another workspace: 404, as an unknown id; nothing created', async () => {
    const other = await tenant(app);
    const form = multipart({ chatapp_phone_number: other.number }, [{ filename: 'x.jpg', type: 'image/jpeg', bytes: FILES.jpeg() }]);
    const foreign = (
      await app.inject({ method: 'POST', url: '/api/chatapp/media', headers: { ...other.headers, ...form.headers }, payload: form.payload })
    ).json().id as string;
    const before = (await call(app, w.key)('GET', '/api/campaigns?limit=100')).json().data.length;
    const res = await call(app, w.key)('POST', '/api/campaigns', campaign(w.phone, [foreign, foreign]));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().errors[0]).toEqual({
      pointer: '/body/template/carousel/cards/0/header/media_id',
      detail: `media_id ${foreign} is not an upload of this workspace`,
    });
    const unknown = await call(app, w.key)('POST', '/api/campaigns', campaign(w.phone, ['med_00000000000000000000', 'med_00000000000000000000']));
    expect(unknown.json().detail.replace('med_00000000000000000000', 'X')).toBe(res.json().detail.replace(foreign, 'X'));
    expect((await call(app, w.key)('GET', '/api/campaigns?limit=100')).json().data.length).toBe(before);
  });

  it('checkMedia with the sender: an upload of another number, or expired, is 422 naming the card', async () => {
    const mine = await uploadFor(w, w.phone);
    const values = campaign(w.phone, [mine.id]).template as never;
    const refusal = (sender: { phoneNumberId: string }) =>
      checkMedia(app.platform, app.platform.store.db, w.workspaceId, values, sender).then(
        () => null,
        (e: unknown) => e,
      );
    expect(await refusal({ phoneNumberId: w.numberId })).toBeNull();
    const other = (await refusal({ phoneNumberId: cloud.numberId })) as HttpProblem;
    expect(other.status).toBe(422);
    expect(other.problem.errors).toEqual([{ pointer: '/body/template/carousel/cards/0/header/media_id', detail: 'uploaded for another sender number' }]);
    await app.platform.store.db
      .updateTable('uploaded_media')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', mine.id)
      .execute();
    const expired = (await refusal({ phoneNumberId: w.numberId })) as HttpProblem;
    expect(expired.status).toBe(422);
    expect(expired.problem.errors![0]!.detail).toBe('expired');
  });

  it('a campaign with an upload of another number: 422 at create naming the card; nothing created', async () => {
    const foreignNumber = await uploadFor(cloud, cloud.phone);
    const before = (await call(app, w.key)('GET', '/api/campaigns?limit=100')).json().data.length;
    const res = await call(app, w.key)('POST', '/api/campaigns', campaign(w.phone, [foreignNumber.id, foreignNumber.id]));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0]).toEqual({ pointer: '/body/template/carousel/cards/0/header/media_id', detail: 'uploaded for another sender number' });
    expect((await call(app, w.key)('GET', '/api/campaigns?limit=100')).json().data.length).toBe(before);
  });

  it('an upload that expires between create and send fails the campaign at send time instead of reaching the provider', async () => {
    const mine = await uploadFor(w, w.phone);
    const body = { ...campaign(w.phone, [mine.id, mine.id]), scheduled_at: new Date(Date.now() + 1500).toISOString() };
    const res = await call(app, w.key)('POST', '/api/campaigns', body);
    expect(res.statusCode, res.body).toBe(201);
    await app.platform.store.db
      .updateTable('uploaded_media')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', mine.id)
      .execute();
    const done = await until(
      async () => {
        const c = await status(res.json().id);
        return c.status === 'failed' && c;
      },
      15_000,
      'failure',
    );
    expect(done.failure_reason).toContain(`Uploaded media ${mine.id}`);
    expect(done.progress.sent).toBe(0);
  });
});
