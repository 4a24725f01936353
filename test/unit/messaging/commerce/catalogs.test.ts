// syncCatalogs and listCatalogProducts: the sandbox's sample catalog, the fake Cloud API's
// catalog read page by page, changes and removals at the provider, provider failures keeping
// the previous copy, signed cursors, and another workspace's ids answering 404.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_CATALOG_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { CloudApiProvider } from '#server/providers/cloud-api.js';
import { cloudTenant, PROBLEMS, tenant, type Tenant } from '../inbox/support.js';

let fake: FakeProvider;
let app: FastifyInstance;
let cloud: Tenant;
let a: Tenant;
let b: Tenant;
const originalProducts = () => [
  {
    id: '5001',
    retailer_id: 'SKU-1',
    name: 'Tee',
    description: 'Cotton',
    price: '€1,234.50',
    sale_price: '',
    currency: 'EUR',
    availability: 'in stock',
    image_url: 'https://example.com/tee.jpg',
    url: 'https://example.com/tee',
  },
  { id: '5002', retailer_id: 'SKU-2', name: 'Mug', price: '¥1,200', currency: 'JPY', availability: 'out of stock' },
  { id: '5003', retailer_id: 'SKU-3', name: 'Cap', price: '15.00 USD', currency: 'USD', availability: 'preorder' },
];

beforeAll(async () => {
  fake = await new FakeProvider().start();
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, RATE_LIMIT_IP_PER_MINUTE: '10000', RATE_LIMIT_PER_MINUTE: '10000' } });
  cloud = await cloudTenant(app);
  a = await tenant(app);
  b = await tenant(app);
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => {
  fake.reset();
  fake.products.splice(0, fake.products.length, ...(originalProducts() as typeof fake.products));
});

const call = (t: Tenant, method: 'GET' | 'POST', url: string) => app.inject({ method, url, headers: t.headers });
const sync = (t: Tenant, waba = t.wabaId) => call(t, 'POST', `/api/ecommerce-catalog/waba/${waba}/sync-catalogs`);
const products = (t: Tenant, catalogId: string, query = '') => call(t, 'GET', `/api/ecommerce-catalog/catalog/${catalogId}/products${query}`);
const count = async (table: 'catalogs' | 'catalog_products') =>
  Number(
    (
      await app.platform.store.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('syncCatalogs on the sandbox', () => {
  it('pulls the sample catalog and its products; a second sync adds and changes nothing', async () => {
    const first = await sync(a);
    expect(first.statusCode, first.body).toBe(200);
    const body = first.json();
    expect(body.waba_id).toBe(a.wabaId);
    expect(body.removed_catalog_ids).toEqual([]);
    expect(body.catalogs).toHaveLength(1);
    expect(body.catalogs[0]).toMatchObject({
      name: 'Sandbox catalog',
      waba_id: a.wabaId,
      product_count: 4,
      products_added: 4,
      products_updated: 0,
      products_removed: 0,
    });
    expect(body.catalogs[0].id).toMatch(/^cat_/);
    expect(body.catalogs[0].provider_catalog_id).toMatch(/^[0-9]+$/);
    const again = (await sync(a)).json();
    expect(again.catalogs[0]).toMatchObject({ id: body.catalogs[0].id, product_count: 4, products_added: 0, products_updated: 0, products_removed: 0 });
    const list = (await products(a, body.catalogs[0].id, '?limit=100')).json();
    expect(list.data.map((p: { retailer_id: string }) => p.retailer_id).sort()).toEqual(['SKU-BAG-03', 'SKU-CAP-04', 'SKU-MUG-02', 'SKU-TEE-01']);
    expect(list.data.find((p: { retailer_id: string }) => p.retailer_id === 'SKU-TEE-01')).toMatchObject({
      price: 2500,
      sale_price: 1999,
      currency: 'EUR',
      availability: 'in_stock',
    });
  });

  it("the provider's account id works as waba_id too", async () => {
    const row = await app.platform.store.db.selectFrom('business_accounts').select('provider_waba_id').where('id', '=', a.wabaId).executeTakeFirstOrThrow();
    const res = await sync(a, row.provider_waba_id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().waba_id).toBe(a.wabaId);
  });

  it("B3 another workspace's account: 404, nothing stored", async () => {
    const before = await count('catalogs');
    const res = await sync(b, a.wabaId);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    expect(await count('catalogs')).toBe(before);
  });

  it("unknown account: 404 with the same body as another workspace's", async () => {
    const res = await sync(a, 'waba_0000000000000000');
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
  });
});

describe('syncCatalogs on the Cloud API', () => {
  it('reads every product page (after cursors) and converts prices and availability', async () => {
    // 150 products: the adapter asks for 100 a page, so two pages.
    for (let i = 0; i < 147; i++)
      fake.products.push({
        id: String(6000 + i),
        retailer_id: `BULK-${i}`,
        name: `Bulk ${String(i).padStart(3, '0')}`,
        price: '1.00',
        currency: 'EUR',
        availability: 'in stock',
      } as (typeof fake.products)[number]);
    const res = await sync(cloud);
    expect(res.statusCode, res.body).toBe(200);
    const catalog = res.json().catalogs[0];
    expect(catalog).toMatchObject({ provider_catalog_id: FAKE_CATALOG_ID, name: 'Acme catalog', product_count: 150, products_added: 150 });
    const pages = fake.requests.filter((r) => r.path === `/${FAKE_CATALOG_ID}/products`);
    expect(pages).toHaveLength(2);
    expect(pages[1].query.after).toBe('100');
    expect(fake.requests.some((r) => r.path === `/${FAKE_WABA_ID}/product_catalogs`)).toBe(true);
    const list = (await products(cloud, catalog.id, '?search=sku-')).json();
    const bySku = Object.fromEntries(list.data.map((p: { retailer_id: string }) => [p.retailer_id, p]));
    expect(bySku['SKU-1']).toMatchObject({
      price: 123450,
      sale_price: null,
      currency: 'EUR',
      availability: 'in_stock',
      image_url: 'https://example.com/tee.jpg',
    });
    expect(bySku['SKU-2']).toMatchObject({ price: 1200, currency: 'JPY', availability: 'out_of_stock', image_url: null, url: null });
    expect(bySku['SKU-3']).toMatchObject({ price: 1500, currency: 'USD', availability: 'preorder' });
  });

  it('changes at the provider: changed products updated, gone ones removed, new ones added', async () => {
    const first = (await sync(cloud)).json().catalogs[0];
    fake.products.splice(1, 1); // SKU-2 gone
    fake.products[0] = { ...fake.products[0], name: 'Organic tee' };
    fake.products.push({
      id: '5004',
      retailer_id: 'SKU-4',
      name: 'Bag',
      price: '9.99',
      currency: 'EUR',
      availability: 'discontinued',
    } as (typeof fake.products)[number]);
    const res = await sync(cloud);
    const catalog = res.json().catalogs[0];
    expect(catalog).toMatchObject({ id: first.id, product_count: 3, products_added: 1, products_updated: 1, products_removed: 1 });
    const names = (await products(cloud, first.id)).json().data.map((p: { name: string }) => p.name);
    expect(names).toEqual(['Bag', 'Cap', 'Organic tee']);
  });

  it('F-5 provider outage: 502 provider-error, the previous copy kept', async () => {
    const first = (await sync(cloud)).json().catalogs[0];
    fake.products.splice(0, 2);
    fake.fail('server-error', { path: /\/products$/, times: 5 });
    const res = await sync(cloud);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, provider_code: 2 });
    expect(res.body).not.toMatch(/stack|at \w+ \(/);
    expect((await products(cloud, first.id)).json().data).toHaveLength(3);
  });

  it('F-8 provider rate limit: 429 with Retry-After, nothing changed', async () => {
    fake.fail('rate-limit', { path: /product_catalogs$/, times: 5, retryAfterSec: 7 });
    const res = await sync(cloud);
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.json().type).toBe(`${PROBLEMS}rate-limited`);
  });

  it('a catalog longer than the adapter reads: an error, never a truncated list (a sync would delete the rest)', async () => {
    for (let i = 0; i < 147; i++)
      fake.products.push({
        id: String(7000 + i),
        retailer_id: `MORE-${i}`,
        name: `More ${i}`,
        price: '1.00',
        currency: 'EUR',
        availability: 'in stock',
      } as (typeof fake.products)[number]);
    const adapter = new CloudApiProvider({ baseUrl: fake.baseUrl, maxPages: 1 });
    await expect(adapter.listProducts({ wabaId: FAKE_WABA_ID, accessToken: FAKE_TOKEN }, FAKE_CATALOG_ID)).rejects.toMatchObject({ kind: 'invalid_response' });
    expect(
      await new CloudApiProvider({ baseUrl: fake.baseUrl, maxPages: 2 }).listProducts({ wabaId: FAKE_WABA_ID, accessToken: FAKE_TOKEN }, FAKE_CATALOG_ID),
    ).toHaveLength(150);
  });

  it('a refused token: 502 and the account marked token_invalid', async () => {
    fake.fail('auth', { path: /product_catalogs$/ });
    const res = await sync(cloud);
    expect(res.statusCode).toBe(502);
    const row = await app.platform.store.db.selectFrom('business_accounts').select('status').where('id', '=', cloud.wabaId).executeTakeFirstOrThrow();
    expect(row.status).toBe('token_invalid');
    expect((await sync(cloud)).statusCode).toBe(200);
  });
});

describe('listCatalogProducts', () => {
  let catalogId: string;
  beforeAll(async () => {
    catalogId = (await sync(a)).json().catalogs[0].id;
  });

  it('pages by name with signed cursors, each product once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await products(a, catalogId, `?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json();
      seen.push(...page.data.map((p: { name: string }) => p.name));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['Baseball cap', 'Canvas tote bag', 'Ceramic mug', 'Organic cotton T-shirt']);
  });

  it('filters by availability and by literal search text', async () => {
    const out = (await products(a, catalogId, '?availability=out_of_stock')).json().data;
    expect(out.map((p: { retailer_id: string }) => p.retailer_id)).toEqual(['SKU-BAG-03']);
    expect((await products(a, catalogId, '?search=MUG')).json().data).toHaveLength(1);
    expect((await products(a, catalogId, `?search=${encodeURIComponent('%')}`)).json().data).toHaveLength(0);
    expect((await products(a, catalogId, `?search=${encodeURIComponent('_')}`)).json().data).toHaveLength(0);
  });

  it("B3 another workspace's catalog: 404 like an unknown one", async () => {
    const theirs = await products(b, catalogId);
    const unknown = await products(b, 'cat_0000000000000000');
    expect(theirs.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(theirs.json().type).toBe(unknown.json().type);
    expect(theirs.json().detail).toContain(catalogId);
  });

  it('B6 an edited cursor: 400 naming the cursor', async () => {
    const next = (await products(a, catalogId, '?limit=1')).json().next_cursor as string;
    const res = await products(a, catalogId, `?limit=1&cursor=${encodeURIComponent(`${next.slice(0, -2)}xx`)}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/query/cursor');
  });

  it('H10 a cursor of another listing (other filters): 400', async () => {
    const next = (await products(a, catalogId, '?limit=1')).json().next_cursor as string;
    const res = await products(a, catalogId, `?limit=1&availability=in_stock&cursor=${encodeURIComponent(next)}`);
    expect(res.statusCode).toBe(400);
  });

  it('B1 an invalid availability or limit: 400', async () => {
    expect((await products(a, catalogId, '?availability=sold')).statusCode).toBe(400);
    expect((await products(a, catalogId, '?limit=0')).statusCode).toBe(400);
  });

  it('J2 NUL in search: 400, not a database error', async () => {
    const res = await products(a, catalogId, '?search=a%00b');
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(`${PROBLEMS}validation`);
  });

  it('no credential: 401', async () => {
    const res = await app.inject({ method: 'GET', url: `/api/ecommerce-catalog/catalog/${catalogId}/products` });
    expect(res.statusCode).toBe(401);
  });
});
