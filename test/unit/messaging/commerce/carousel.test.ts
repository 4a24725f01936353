// Product-carousel campaigns: each card must name a synced catalog of the workspace (404
// otherwise) holding the card's product (422 naming the card); the worker sends the provider's
// catalog id, on the sandbox (campaign completes) and on the fake Cloud API (wire body checked).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_CATALOG_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { addContacts, until } from '../campaigns/support.js';
import { cloudTenant, PROBLEMS, sandbox, storeTemplate, tenant, type Tenant } from '../inbox/support.js';

let fake: FakeProvider;
let app: FastifyInstance;

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, RATE_LIMIT_IP_PER_MINUTE: '10000', RATE_LIMIT_PER_MINUTE: '10000' } });
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const CAROUSEL_TEMPLATE = {
  name: 'spring_picks',
  category: 'MARKETING' as const,
  components: [
    { type: 'BODY', text: 'Hi {{1}}, our spring picks.' },
    {
      type: 'CAROUSEL',
      cards: [0, 1].map(() => ({
        components: [
          { type: 'HEADER', format: 'PRODUCT' },
          { type: 'BUTTONS', buttons: [{ type: 'SPM', text: 'View' }] },
        ],
      })),
    },
  ],
};

async function shop(t: Tenant) {
  await storeTemplate(app, t, CAROUSEL_TEMPLATE);
  await addContacts(app.platform.store.db, t.workspaceId, 2, `+4915${Math.floor(Math.random() * 90 + 10)}`);
  const res = await app.inject({ method: 'POST', url: `/api/ecommerce-catalog/waba/${t.wabaId}/sync-catalogs`, headers: t.headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().catalogs[0] as { id: string; provider_catalog_id: string };
}

const campaign = (t: Tenant, cards: { catalog_id: string; product_retailer_id: string }[]) =>
  app.inject({
    method: 'POST',
    url: '/api/campaigns',
    headers: t.headers,
    payload: {
      name: 'Spring',
      chatapp_phone_number: t.number,
      audience: { type: 'all_contacts' },
      template: { name: 'spring_picks', language: 'en_US', body: ['there'], carousel: { type: 'product', cards } },
    },
  });
const campaignCount = async (t: Tenant) =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('campaigns')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );
const finished = (t: Tenant, id: string) =>
  until(
    async () => {
      const v = (await app.inject({ method: 'GET', url: `/api/campaigns/${id}`, headers: t.headers })).json();
      return ['completed', 'failed'].includes(v.status) && v;
    },
    15_000,
    'campaign end',
  );

describe('product carousel campaigns', () => {
  it('on the sandbox: accepted, sent with the provider catalog id, completes', async () => {
    const t = await tenant(app);
    const catalog = await shop(t);
    const provider = sandbox(app);
    const original = provider.sendMessage.bind(provider);
    const sent: any[] = [];
    provider.sendMessage = async (...args: Parameters<typeof original>) => {
      sent.push(args[2]);
      return original(...args);
    };
    try {
      const res = await campaign(t, [
        { catalog_id: catalog.id, product_retailer_id: 'SKU-TEE-01' },
        { catalog_id: catalog.id, product_retailer_id: 'SKU-MUG-02' },
      ]);
      expect(res.statusCode, res.body).toBe(201);
      const done = await finished(t, res.json().id);
      expect(done.status).toBe('completed');
      expect(done.progress.failed).toBe(0);
      expect(sent).toHaveLength(2);
      const cards = sent[0].template.components.find((c: { type: string }) => c.type === 'carousel').cards;
      expect(cards.map((c: any) => c.components[0].parameters[0].product)).toEqual([
        { product_retailer_id: 'SKU-TEE-01', catalog_id: catalog.provider_catalog_id },
        { product_retailer_id: 'SKU-MUG-02', catalog_id: catalog.provider_catalog_id },
      ]);
    } finally {
      provider.sendMessage = original;
    }
  });

  it('on the Cloud API: the wire body names the provider catalog', async () => {
    const t = await cloudTenant(app);
    const catalog = await shop(t);
    expect(catalog.provider_catalog_id).toBe(FAKE_CATALOG_ID);
    const res = await campaign(t, [
      { catalog_id: catalog.id, product_retailer_id: 'SKU-1' },
      { catalog_id: catalog.id, product_retailer_id: 'SKU-3' },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect((await finished(t, res.json().id)).status).toBe('completed');
    const sends = fake.requests.filter((r) => /\/(messages|marketing_messages)$/.test(r.path));
    expect(sends).toHaveLength(2);
    const carousel = sends[0].body.template.components.find((c: { type: string }) => c.type === 'carousel');
    expect(carousel.cards[1].components[0].parameters[0]).toEqual({ type: 'product', product: { product_retailer_id: 'SKU-3', catalog_id: FAKE_CATALOG_ID } });
  });

  it('B3 a catalog of another workspace: 404 naming the card, nothing created', async () => {
    const mine = await tenant(app);
    const theirs = await tenant(app);
    await shop(mine);
    const catalog = await shop(theirs);
    const res = await campaign(mine, [
      { catalog_id: catalog.id, product_retailer_id: 'SKU-TEE-01' },
      { catalog_id: catalog.id, product_retailer_id: 'SKU-MUG-02' },
    ]);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}not-found`, errors: [{ pointer: '/body/template/carousel/cards/0/catalog_id' }] });
    expect(await campaignCount(mine)).toBe(0);
  });

  it('a catalog never synced: 404', async () => {
    const t = await tenant(app);
    await storeTemplate(app, t, CAROUSEL_TEMPLATE);
    const res = await campaign(t, [
      { catalog_id: 'cat_6Jq2Wn8KxL4tR7vP', product_retailer_id: 'A' },
      { catalog_id: 'cat_6Jq2Wn8KxL4tR7vP', product_retailer_id: 'B' },
    ]);
    expect(res.statusCode).toBe(404);
  });

  it('a product not in the catalog: 422 naming the card', async () => {
    const t = await tenant(app);
    const catalog = await shop(t);
    const res = await campaign(t, [
      { catalog_id: catalog.id, product_retailer_id: 'SKU-TEE-01' },
      { catalog_id: catalog.id, product_retailer_id: 'SKU-NOPE' },
    ]);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, errors: [{ pointer: '/body/template/carousel/cards/1/product_retailer_id' }] });
    expect(res.json().detail).toContain('Card 2');
    expect(await campaignCount(t)).toBe(0);
  });

  it('a catalog removed after the campaign was created: the campaign fails with the reason, nothing sent', async () => {
    const t = await tenant(app);
    const catalog = await shop(t);
    const res = await app.inject({
      method: 'POST',
      url: '/api/campaigns',
      headers: t.headers,
      payload: {
        name: 'Later',
        chatapp_phone_number: t.number,
        audience: { type: 'all_contacts' },
        scheduled_at: new Date(Date.now() + 1500).toISOString(),
        template: {
          name: 'spring_picks',
          language: 'en_US',
          body: ['there'],
          carousel: {
            type: 'product',
            cards: [
              { catalog_id: catalog.id, product_retailer_id: 'SKU-TEE-01' },
              { catalog_id: catalog.id, product_retailer_id: 'SKU-CAP-04' },
            ],
          },
        },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    await app.platform.store.db.deleteFrom('catalogs').where('id', '=', catalog.id).execute();
    const done = await finished(t, res.json().id);
    expect(done.status).toBe('failed');
    expect(done.failure_reason).toContain(catalog.id);
    const messages = await app.platform.store.db.selectFrom('messages').select('id').where('workspace_id', '=', t.workspaceId).execute();
    expect(messages).toHaveLength(0);
  });
});
