// Templates: the eleven create variants of the contract (its own examples, media samples served
// from 127.0.0.1), the provider's rules (bad-inputs H14) with rule and field named, header_url reachability
// and SSRF (bad-inputs G1, G2, G11), validate-media-url, list with filters and cursors (bad-inputs B5, B6), sync-status
// with its template.status_updated events, on the sandbox and on the fake Cloud API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { loadDocument } from '#test/contract/cases.js';
import { FakeProvider } from '#test/fakes/fake-provider.js';
import { cloudTenant, counts, PROBLEMS, storeTemplate, tenant, type Tenant } from '../inbox/support.js';
import { startMediaServer } from './media-server.js';

let app: FastifyInstance;
let strictApp: FastifyInstance;
let media: Awaited<ReturnType<typeof startMediaServer>>;
let a: Tenant;
let b: Tenant;
const EXAMPLES: Record<string, any> = loadDocument('messaging').paths['/api/template/create'].post.requestBody.content['application/json'].examples;

beforeAll(async () => {
  media = await startMediaServer();
  app = await buildShared({ env: { ALLOW_PRIVATE_URLS: 'true' } });
  strictApp = await buildShared({ env: { ALLOW_PRIVATE_URLS: 'false' } });
  a = await tenant(app);
  b = await tenant(app);
}, 240_000);
afterAll(() => media.close());

/** An example body for tenant `t`: its account, a fresh name, samples on the local media host. */
function example(name: string, t: Tenant): any {
  const body = structuredClone(EXAMPLES[name].value);
  body.waba_id = t.wabaId;
  body.name = `${body.name}_${Math.random().toString(36).slice(2, 8)}`;
  const json = JSON.stringify(body).replace(
    /https:\/\/cdn\.example\.com\/samples\/[a-z-]+\.(jpg|pdf)/g,
    (_m, ext: string) => `${media.base}/${ext === 'pdf' ? 'doc.pdf' : 'img.jpg'}`,
  );
  return JSON.parse(json);
}
const create = (t: Tenant, body: unknown, on = app) => on.inject({ method: 'POST', url: '/api/template/create', headers: t.headers, payload: body as object });

describe('createTemplate: the eleven variants', () => {
  it.each([
    'simple',
    'variables',
    'quick_reply_buttons',
    'call_to_action_buttons',
    'coupon_code',
    'otp_authentication',
    'limited_time_offer',
    'catalog_button',
    'call_permission',
    'carousel',
    'document_header',
  ])('%s: 201, stored as submitted, APPROVED by the sandbox rule', async (variant) => {
    const body = example(variant, a);
    const res = await create(a, body);
    expect(res.statusCode, res.body).toBe(201);
    const t = res.json();
    expect(t).toMatchObject({
      name: body.name,
      language: body.language,
      category: body.category,
      status: 'APPROVED',
      waba_id: a.wabaId,
      rejected_reason: null,
    });
    expect(t.id).toMatch(/^tpl_/);
    expect(t.provider_template_id).toMatch(/^\d+$/);
    expect(t.components).toEqual(body.components);
  });

  it('media samples are fetched at create time (document and carousel headers)', async () => {
    const before = media.hits.get('/doc.pdf') ?? 0;
    expect((await create(a, example('document_header', a))).statusCode).toBe(201);
    expect(media.hits.get('/doc.pdf')).toBe(before + 1);
  });

  it('the sandbox rejects by name: REJECTED with the reason', async () => {
    const body = { ...example('simple', a), name: `promo_reject_${Date.now()}` };
    const res = await create(a, body);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'REJECTED', rejected_reason: 'INVALID_FORMAT' });
  });

  it('the same name and language twice: 409 conflict, one row', async () => {
    const body = example('simple', a);
    expect((await create(a, body)).statusCode).toBe(201);
    const before = await counts(app);
    const again = await create(a, body);
    expect(again.statusCode).toBe(409);
    expect(again.json().type).toBe(`${PROBLEMS}conflict`);
    expect(await counts(app)).toEqual(before);
  });
});

describe("H14 the provider's rules: 422 naming rule and field, nothing stored", () => {
  const cases: [string, (body: any) => void, string, string][] = [
    ['OTP button in a MARKETING template', (x) => (x.category = 'MARKETING'), 'otp-authentication-only', '/body/components/2/buttons'],
    [
      'AUTHENTICATION without an OTP button',
      (x) => (x.components = [{ type: 'BODY', add_security_recommendation: true }]),
      'authentication-otp-button',
      '/body/components',
    ],
    [
      'variables {{1}} {{3}}',
      (x) => (x.components = [{ type: 'BODY', text: 'Hi {{1}} and {{3}} ok', example: { body_text: [['a', 'b']] } }]),
      'variables-without-gaps',
      '/body/components/0/text',
    ],
    ['a variable without an example', (x) => (x.components = [{ type: 'BODY', text: 'Hi {{1}} ok' }]), 'variable-examples', '/body/components/0/example'],
    [
      'examples not matching the variables',
      (x) => (x.components = [{ type: 'BODY', text: 'Hi {{1}} ok', example: { body_text: [['a', 'b']] } }]),
      'variable-examples',
      '/body/components/0/example/body_text/0',
    ],
    ['named variable {{name}}', (x) => (x.components = [{ type: 'BODY', text: 'Hi {{name}} ok' }]), 'numbered-variables', '/body/components/0/text'],
    [
      'body ending with a variable',
      (x) => (x.components = [{ type: 'BODY', text: 'Your code is {{1}}', example: { body_text: [['1']] } }]),
      'variable-at-edge',
      '/body/components/0/text',
    ],
    [
      'three URL buttons',
      (x) =>
        (x.components = [
          { type: 'BODY', text: 'Hi' },
          { type: 'BUTTONS', buttons: [1, 2, 3].map((i) => ({ type: 'URL', text: `L${i}`, url: `https://x.example/${i}` })) },
        ]),
      'button-counts',
      '/body/components/1/buttons',
    ],
    [
      'quick replies split by a URL button',
      (x) =>
        (x.components = [
          { type: 'BODY', text: 'Hi' },
          {
            type: 'BUTTONS',
            buttons: [
              { type: 'QUICK_REPLY', text: 'a' },
              { type: 'URL', text: 'b', url: 'https://x.example/' },
              { type: 'QUICK_REPLY', text: 'c' },
            ],
          },
        ]),
      'quick-replies-grouped',
      '/body/components/1/buttons',
    ],
    [
      'image header without header_url',
      (x) =>
        (x.components = [
          { type: 'HEADER', format: 'IMAGE' },
          { type: 'BODY', text: 'Hi' },
        ]),
      'media-header-sample',
      '/body/components/0/header_url',
    ],
    [
      'two bodies',
      (x) =>
        (x.components = [
          { type: 'BODY', text: 'Hi' },
          { type: 'BODY', text: 'Ho' },
        ]),
      'one-of-each',
      '/body/components/1',
    ],
    ['no body', (x) => (x.components = [{ type: 'FOOTER', text: 'Bye' }]), 'body-required', '/body/components'],
    ['unknown language xx_YY', (x) => (x.language = 'xx_YY'), 'language', '/body/language'],
    ['limited-time offer in UTILITY', (x) => (x.category = 'UTILITY'), 'offer-marketing-only', '/body/components/1'],
  ];
  it.each(cases)('%s', async (_title, mutate, rule, pointer) => {
    const base =
      _title.startsWith('OTP') || _title.startsWith('AUTHENTICATION') ? 'otp_authentication' : _title.startsWith('limited') ? 'limited_time_offer' : 'simple';
    const body = example(base, a);
    mutate(body);
    const before = await counts(app);
    const res = await create(a, body);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().detail).toContain(`rule: ${rule}`);
    expect(res.json().errors[0].pointer).toBe(pointer);
    expect(await counts(app)).toEqual(before);
  });

  it('name with capitals, or a language "EN": 400 validation from the schema', async () => {
    expect((await create(a, { ...example('simple', a), name: 'Order_Shipped' })).statusCode).toBe(400);
    expect((await create(a, { ...example('simple', a), language: 'EN' })).statusCode).toBe(400);
  });

  it('H8 NUL inside the body text: 400, nothing stored', async () => {
    const body = example('simple', a);
    body.components[0].text = 'Hi\u0000there';
    expect((await create(a, body)).statusCode).toBe(400);
  });
});

describe('header_url at create time', () => {
  it('unreachable (404) or too large for an image: 422 naming the field', async () => {
    const body = example('document_header', a);
    body.components[0].header_url = `${media.base}/missing.pdf`;
    const missing = await create(a, body);
    expect(missing.statusCode).toBe(422);
    expect(missing.json().errors[0].pointer).toBe('/body/components/0/header_url');
    const img = example('limited_time_offer', a);
    img.components[0].header_url = `${media.base}/big.png`;
    const big = await create(a, img);
    expect(big.statusCode).toBe(422);
    expect(big.json().detail).toMatch(/limit/);
  });

  it.each(['http://127.0.0.1:9/x.pdf', 'http://localhost/x.pdf', 'http://10.0.0.1/x.pdf', 'http://192.168.1.1/x.pdf'])(
    'G1/G2 header_url %s: 422 unsafe-url, no connection',
    async (url) => {
      const s = await tenant(strictApp);
      const body = example('document_header', s);
      body.components[0].header_url = url;
      const res = await create(s, body, strictApp);
      expect(res.statusCode).toBe(422);
      expect(res.json().type).toBe(`${PROBLEMS}unsafe-url`);
      expect(res.json().errors[0].pointer).toBe('/body/components/0/header_url');
    },
  );

  it.each(['file:///etc/passwd', 'gopher://x.test/', 'data:text/plain,hi', 'ftp://x.test/a.pdf'])('G11 header_url %s: 400', async (url) => {
    const body = example('document_header', a);
    body.components[0].header_url = url;
    expect((await create(a, body)).statusCode).toBe(400);
  });
});

describe('validateMediaUrl', () => {
  const check = (payload: object, on = app, t = a) => on.inject({ method: 'POST', url: '/api/template/validate-media-url', headers: t.headers, payload });

  it('a usable JPEG: reachable, within limits, no problems; nothing stored', async () => {
    const before = await counts(app);
    const res = await check({ url: `${media.base}/img.jpg`, kind: 'image' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      reachable: true,
      http_status: 200,
      content_type: 'image/jpeg',
      within_limits: true,
      problems: [],
      limits: { max_size_bytes: 5 * 1024 * 1024 },
    });
    expect(await counts(app)).toEqual(before);
  });

  it('followed redirect, wrong type, too large, 404: each reported with its code', async () => {
    expect((await check({ url: `${media.base}/moved.jpg`, kind: 'image' })).json()).toMatchObject({ reachable: true, within_limits: true });
    expect((await check({ url: `${media.base}/page.html`, kind: 'image' })).json().problems[0].code).toBe('content_type_not_allowed');
    expect((await check({ url: `${media.base}/big.png`, kind: 'image' })).json().problems.map((p: any) => p.code)).toEqual(['too_large']);
    const gone = (await check({ url: `${media.base}/nothing`, kind: 'document' })).json();
    expect(gone).toMatchObject({ reachable: false, http_status: 404, within_limits: false });
    expect(gone.problems[0].code).toBe('http_error');
  });

  it.each(['http://127.0.0.1/', 'http://0.0.0.0/', 'http://172.16.0.1/', 'http://100.64.0.1/'])('G1/G2 %s: 422 unsafe-url naming /body/url', async (url) => {
    const s = await tenant(strictApp);
    const res = await check({ url, kind: 'image' }, strictApp, s);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/url');
  });

  it.each(['file:///etc/passwd', 'javascript:alert(1)'])('G11 %s: 400', async (url) => {
    expect((await check({ url, kind: 'image' })).statusCode).toBe(400);
  });
});

describe('listTemplates', () => {
  it("B5 only the caller's templates, newest first, filters and cursor pages; B6 another workspace's cursor is 400", async () => {
    const t = await tenant(app);
    for (const name of ['t_one', 't_two', 't_three']) await storeTemplate(app, t, { name, components: [{ type: 'BODY', text: 'Hi' }] });
    await storeTemplate(app, t, { name: 't_pending', status: 'PENDING', category: 'MARKETING', components: [{ type: 'BODY', text: 'Hi' }] });
    await storeTemplate(app, b, { name: 't_one', components: [{ type: 'BODY', text: 'Hi' }] });
    const list = (q: string, as = t) => app.inject({ method: 'GET', url: `/api/templates${q}`, headers: as.headers });
    const all = (await list('')).json();
    expect(all.data.map((x: any) => x.name)).toEqual(['t_pending', 't_three', 't_two', 't_one']);
    expect((await list('?status=PENDING')).json().data.map((x: any) => x.name)).toEqual(['t_pending']);
    expect((await list('?category=UTILITY&name=t_one')).json().data).toHaveLength(1);
    const page1 = (await list('?limit=2')).json();
    expect(page1.has_more).toBe(true);
    const page2 = (await list(`?limit=2&cursor=${page1.next_cursor}`)).json();
    expect(page2.data.map((x: any) => x.name)).toEqual(['t_two', 't_one']);
    expect((await list(`?cursor=${page1.next_cursor}`, b)).statusCode).toBe(400);
    expect((await list(`?waba_id=${t.wabaId}`, b)).statusCode).toBe(404);
  });
});

describe('syncTemplateStatus (sandbox)', () => {
  it('a PENDING template the provider now approves: changed, template.status_updated enqueued in the same transaction', async () => {
    const t = await tenant(app);
    const db = app.platform.store.db;
    await db
      .insertInto('webhook_endpoints')
      .values({
        id: `we_${Date.now()}abcdefgh`.slice(0, 23),
        workspace_id: t.workspaceId,
        api: 'messaging',
        url: 'https://receiver.invalid/hook',
        event_types: ['template.status_updated'],
        secret_enc: app.platform.secrets.encrypt('whsec_test'),
      })
      .execute();
    const tpl = await storeTemplate(app, t, { name: 'order_update', status: 'PENDING', components: [{ type: 'BODY', text: 'Hi' }] });
    await storeTemplate(app, t, { name: 'still_fine', components: [{ type: 'BODY', text: 'Hi' }] });
    const res = await app.inject({ method: 'POST', url: '/api/template/sync-status', headers: t.headers });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().checked).toBe(2);
    expect(res.json().changed.map((x: any) => [x.id, x.status])).toEqual([[tpl.id, 'APPROVED']]);
    const events = await db
      .selectFrom('outbox')
      .selectAll()
      .where('workspace_id', '=', t.workspaceId)
      .where('event_type', '=', 'template.status_updated')
      .execute();
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0].payload).data).toMatchObject({ template_id: tpl.id, status: 'APPROVED', previous_status: 'PENDING', waba_id: t.wabaId });
    const again = await app.inject({ method: 'POST', url: '/api/template/sync-status', headers: t.headers });
    expect(again.json().changed).toEqual([]);
  });

  it("B2 another workspace's waba_id: 404", async () => {
    const res = await app.inject({ method: 'POST', url: `/api/template/sync-status?waba_id=${a.wabaId}`, headers: b.headers });
    expect(res.statusCode).toBe(404);
  });
});

describe('on the fake Cloud API', () => {
  let fake: FakeProvider;
  let cloud: FastifyInstance;
  let t: Tenant;
  beforeAll(async () => {
    fake = await new FakeProvider().start();
    cloud = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
    t = await cloudTenant(cloud);
  }, 240_000);
  afterAll(() => fake.stop());

  it("create posts Meta's body to /{waba}/message_templates and stores PENDING; sync picks up APPROVED", async () => {
    const body = example('variables', t);
    const res = await create(t, body, cloud);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().status).toBe('PENDING');
    const call = fake.requests.find((r) => r.method === 'POST' && r.path.endsWith('/message_templates'))!;
    expect(call.body).toMatchObject({ name: body.name, language: body.language, category: body.category, components: body.components });
    fake.templates.find((x) => x.name === body.name)!.status = 'APPROVED';
    const sync = await cloud.inject({ method: 'POST', url: '/api/template/sync-status', headers: t.headers });
    expect(sync.statusCode, sync.body).toBe(200);
    expect(sync.json().changed[0]).toMatchObject({ name: body.name, status: 'APPROVED' });
  });

  it('a provider rate limit on create: 429 with Retry-After, nothing stored', async () => {
    fake.fail('rate-limit', { path: /message_templates$/, retryAfterSec: 60, method: 'POST' });
    const before = await counts(cloud);
    const res = await create(t, example('simple', t), cloud);
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('60');
    expect(await counts(cloud)).toEqual(before);
  });
});
