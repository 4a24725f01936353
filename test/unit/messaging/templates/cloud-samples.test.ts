// Media header samples on the Cloud API (issue 8): the sample fetched once through the SSRF guard,
// its bytes sent through Meta's resumable upload (`/{app-id}/uploads`, then the session), and the
// handle submitted as `example.header_handle` instead of our `header_url`. Without PROVIDER_APP_ID:
// 422 naming it and the field, before any fetch or provider call. Provider refusals on the upload
// map as elsewhere and store nothing.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { loadDocument } from '#test/contract/cases.js';
import { FAKE_APP_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { loadConfig } from '#server/config.js';
import { cloudTenant, counts, PROBLEMS, type Tenant } from '../inbox/support.js';

const FILES: Record<string, { type: string; bytes: Buffer }> = {
  '/img.jpg': { type: 'image/jpeg', bytes: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(3000, 1)]) },
  '/clip.mp4': { type: 'video/mp4', bytes: Buffer.concat([Buffer.from('000000186674797069736f6d', 'hex'), Buffer.alloc(4000, 2)]) },
  '/invoice.pdf': { type: 'application/pdf', bytes: Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n') },
  // Within the provider's 100 MB for documents, over what the server downloads for a sample.
  '/huge.pdf': { type: 'application/pdf', bytes: Buffer.alloc(17 * 1024 * 1024, 0x25) },
};
const hits = new Map<string, number>();
const host = createServer((req, res) => {
  const f = FILES[req.url ?? ''];
  hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
  if (!f) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': f.type, 'content-length': f.bytes.length }).end(f.bytes);
});
let base = '';

let fake: FakeProvider;
let cloud: FastifyInstance;
let noAppId: FastifyInstance;
let t: Tenant;
let u: Tenant;
const EXAMPLES: Record<string, any> = loadDocument('messaging').paths['/api/template/create'].post.requestBody.content['application/json'].examples;

beforeAll(async () => {
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  fake = await new FakeProvider().start();
  cloud = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl, PROVIDER_APP_ID: FAKE_APP_ID } });
  noAppId = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl } });
  t = await cloudTenant(cloud);
  u = await cloudTenant(noAppId);
}, 240_000);
afterAll(async () => {
  await fake.stop();
  host.closeAllConnections();
  await new Promise<void>((resolve) => host.close(() => resolve()));
});
beforeEach(() => {
  fake.reset();
  hits.clear();
});

const unique = (prefix: string) => `${prefix}_${Math.random().toString(36).slice(2, 8)}`;
const withHeader = (tenant: Tenant, format: string, path: string) => ({
  waba_id: tenant.wabaId,
  name: unique(`promo_${format.toLowerCase()}`),
  language: 'en_US',
  category: 'MARKETING',
  components: [
    { type: 'HEADER', format, header_url: `${base}${path}` },
    { type: 'BODY', text: 'New arrivals are in.' },
  ],
});
const create = (app: FastifyInstance, tenant: Tenant, body: unknown) =>
  app.inject({ method: 'POST', url: '/api/template/create', headers: tenant.headers, payload: body as object });
const createCall = () => fake.requests.find((r) => r.method === 'POST' && r.path === `/${FAKE_WABA_ID}/message_templates`);

describe('Cloud API template with a media header sample', () => {
  it.each([
    ['IMAGE', '/img.jpg'],
    ['VIDEO', '/clip.mp4'],
    ['DOCUMENT', '/invoice.pdf'],
  ])('%s: sample fetched once, uploaded by resumable upload, submitted as example.header_handle', async (format, path) => {
    const body = withHeader(t, format, path);
    const res = await create(cloud, t, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(hits.get(path)).toBe(1);
    const file = FILES[path]!;

    const [open, send, submit] = fake.requests;
    expect(open).toMatchObject({ method: 'POST', path: `/${FAKE_APP_ID}/uploads` });
    expect(open!.query).toMatchObject({ file_name: path.slice(1), file_length: String(file.bytes.length), file_type: file.type });
    expect(send!.path).toMatch(/^\/upload:/);
    expect(send!.headers.authorization).toBe(`OAuth ${FAKE_TOKEN}`);
    expect(Buffer.compare(send!.body, file.bytes)).toBe(0);
    expect(submit).toBe(createCall());

    const header = submit!.body.components[0];
    expect(header).toEqual({ type: 'HEADER', format, example: { header_handle: [expect.any(String)] } });
    const sample = fake.samples.get(header.example.header_handle[0]);
    expect(sample?.type).toBe(file.type);
    expect(Buffer.compare(sample!.bytes, file.bytes)).toBe(0);
    expect(submit!.body.components[1]).toEqual(body.components[1]);
    // Our copy keeps the components as submitted.
    expect(res.json()).toMatchObject({ status: 'PENDING', components: body.components });
  });

  it('carousel: each card header gets its own handle', async () => {
    const body = structuredClone(EXAMPLES.carousel.value);
    body.waba_id = t.wabaId;
    body.name = unique('carousel');
    const cards = body.components.find((c: any) => c.type === 'CAROUSEL').cards;
    for (const card of cards) card.components.find((c: any) => c.type === 'HEADER').header_url = `${base}/img.jpg`;
    const res = await create(cloud, t, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(fake.requests.filter((r) => r.path === `/${FAKE_APP_ID}/uploads`)).toHaveLength(cards.length);
    const sent = createCall()!.body.components.find((c: any) => c.type === 'CAROUSEL').cards;
    const handles = sent.map((card: any) => card.components.find((c: any) => c.type === 'HEADER'));
    for (const h of handles) {
      expect(h.header_url).toBeUndefined();
      expect(fake.samples.has(h.example.header_handle[0])).toBe(true);
    }
    expect(new Set(handles.map((h: any) => h.example.header_handle[0])).size).toBe(cards.length);
  });

  it('without PROVIDER_APP_ID: 422 naming it and header_url; no fetch, no provider call, nothing stored', async () => {
    const before = await counts(noAppId);
    const res = await create(noAppId, u, withHeader(u, 'IMAGE', '/img.jpg'));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, errors: [{ pointer: '/body/components/0/header_url' }] });
    expect(res.json().detail).toContain('PROVIDER_APP_ID');
    expect(fake.requests).toHaveLength(0);
    expect(hits.size).toBe(0);
    expect(await counts(noAppId)).toEqual(before);
  });

  it('without PROVIDER_APP_ID a template without media is still created', async () => {
    const body = withHeader(u, 'IMAGE', '/img.jpg');
    body.components = [{ type: 'BODY', text: 'New arrivals are in.' }] as typeof body.components;
    const res = await create(noAppId, u, body);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('the provider refuses the upload (#100): 422 with provider_code; no template call, nothing stored', async () => {
    fake.fail(
      {
        status: 400,
        body: { error: { message: '(#100) Invalid parameter', type: 'OAuthException', code: 100, error_data: { details: 'file_type is not supported' } } },
      },
      { path: /\/uploads$/ },
    );
    const before = await counts(cloud);
    const res = await create(cloud, t, withHeader(t, 'IMAGE', '/img.jpg'));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, provider_code: 100 });
    expect(createCall()).toBeUndefined();
    expect(await counts(cloud)).toEqual(before);
  });

  it('the provider fails on the bytes (5xx): 502 provider-error; no template call, nothing stored', async () => {
    fake.fail('server-error', { path: /^\/upload:/, times: 5 });
    const before = await counts(cloud);
    const res = await create(cloud, t, withHeader(t, 'VIDEO', '/clip.mp4'));
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json().type).toBe(`${PROBLEMS}provider-error`);
    expect(createCall()).toBeUndefined();
    expect(await counts(cloud)).toEqual(before);
  });

  it('a rate limit on the upload: 429 with Retry-After, nothing stored', async () => {
    fake.fail('rate-limit', { path: /\/uploads$/, retryAfterSec: 90 });
    const res = await create(cloud, t, withHeader(t, 'IMAGE', '/img.jpg'));
    expect(res.statusCode, res.body).toBe(429);
    expect(res.headers['retry-after']).toBe('90');
    expect(createCall()).toBeUndefined();
  });

  it('a document sample over the 16 MB sample download: 422 naming header_url, no provider call', async () => {
    const res = await create(cloud, t, withHeader(t, 'DOCUMENT', '/huge.pdf'));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0]).toMatchObject({ pointer: '/body/components/0/header_url' });
    expect(res.json().errors[0].detail).toContain('16 MB');
    expect(fake.requests).toHaveLength(0);
  });

  it('an unreachable sample: 422 naming header_url, no provider call', async () => {
    const res = await create(cloud, t, withHeader(t, 'IMAGE', '/gone.jpg'));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors[0]).toMatchObject({ pointer: '/body/components/0/header_url' });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('PROVIDER_APP_ID', () => {
  it('is read as the numeric Meta app id; anything else stops the start with a clear message', () => {
    expect(loadConfig({ PROVIDER_APP_ID: '1234567890' }).providerAppId).toBe('1234567890');
    expect(loadConfig({}).providerAppId).toBeUndefined();
    expect(() => loadConfig({ PROVIDER_APP_ID: '../me/accounts' })).toThrow(/PROVIDER_APP_ID must be the numeric Meta app id/);
  });
});
