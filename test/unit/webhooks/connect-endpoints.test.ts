// Connect webhook endpoints: create, list, get, update, delete, rotate; URL policy (G) when
// accepted; scope (bad-inputs A7); tenant isolation (bad-inputs B1); the secret shown once (bad-inputs L1) and encrypted (bad-inputs L2).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { connectBearer } from '#test/support/connect.js';
import { bearer, sameness } from '../account/support.js';
import { buildShared } from '#test/helper.js';
import { appWithClock, createConnectEndpoint, tenant, type Tenant } from './support.js';

const BASE = '/api/connect/webhook-endpoints';
let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  ({ app } = await appWithClock());
  a = await tenant(app);
  b = await tenant(app);
});

const create = (t: Tenant, payload: Record<string, unknown>) => app.inject({ method: 'POST', url: BASE, headers: t.connect, payload });
const rowCount = async () =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('Connect webhook endpoints', () => {
  it('creates an endpoint and answers its whsec_ secret once, with a matching prefix', async () => {
    const res = await create(a, { url: 'https://crm.test/webhooks/connect', enabled_events: ['link.opened', 'link.revoked'], description: 'CRM' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      url: 'https://crm.test/webhooks/connect',
      enabled_events: ['link.opened', 'link.revoked'],
      description: 'CRM',
      status: 'enabled',
      api_version: '2026-11-01',
      previous_secret_expires_at: null,
    });
    expect(body.id).toMatch(/^whe_[0-9A-Za-z]{20}$/);
    expect(body.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(body.secret_prefix).toBe(body.secret.slice(0, 12));
  });

  it('L1 the secret appears only in the create and rotate answers', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/l1', enabled_events: ['*'] });
    const answers = [
      await app.inject({ method: 'GET', url: `${BASE}/${created.id}`, headers: a.connect }),
      await app.inject({ method: 'GET', url: BASE, headers: a.connect }),
      await app.inject({ method: 'PATCH', url: `${BASE}/${created.id}`, headers: a.connect, payload: { description: 'x' } }),
    ];
    for (const res of answers) {
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain(created.secret);
      expect(res.body).not.toContain('"secret"');
    }
    const rotated = await app.inject({ method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, headers: a.connect, payload: {} });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toMatch(/^whsec_/);
    expect(rotated.json().secret).not.toBe(created.secret);
  });

  it('L2 the webhook_endpoints row holds no plaintext secret', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/l2', enabled_events: ['link.opened'] });
    await app.inject({ method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, headers: a.connect, payload: { overlap_seconds: 600 } });
    const row = await app.platform.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(created.secret);
    expect(stored).not.toContain(created.secret.slice(12));
    // The previous secret is kept for the overlap, encrypted too: it decrypts to the original.
    expect(app.platform.secrets.decrypt(row.previous_secret_enc!)).toBe(created.secret);
  });

  it('lists newest first with a cursor, only the workspace’s own endpoints (B5)', async () => {
    const t = await tenant(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createConnectEndpoint(app, t, { url: `https://crm.test/list/${i}`, enabled_events: ['link.opened'] })).id);
    const first = await app.inject({ method: 'GET', url: `${BASE}?limit=2`, headers: t.connect });
    expect(first.statusCode).toBe(200);
    expect(first.json().data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    expect(first.json().has_more).toBe(true);
    const second = await app.inject({ method: 'GET', url: `${BASE}?limit=2&cursor=${first.json().next_cursor}`, headers: t.connect });
    expect(second.json()).toMatchObject({ data: [{ id: ids[0] }], has_more: false, next_cursor: null });
    // bad-inputs B6: the cursor of one workspace is refused in another.
    const foreign = await app.inject({ method: 'GET', url: `${BASE}?cursor=${first.json().next_cursor}`, headers: b.connect });
    expect(foreign.statusCode).toBe(400);
  });

  it('updates URL, events, description and status; omitted fields stay', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/u', enabled_events: ['link.opened'], description: 'keep' });
    const res = await app.inject({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      headers: a.connect,
      payload: { url: 'https://crm.test/u2', enabled_events: ['session.updated'] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ url: 'https://crm.test/u2', enabled_events: ['session.updated'], description: 'keep', status: 'enabled' });
    const cleared = await app.inject({ method: 'PATCH', url: `${BASE}/${created.id}`, headers: a.connect, payload: { description: null, status: 'disabled' } });
    expect(cleared.json()).toMatchObject({ description: null, status: 'disabled', url: 'https://crm.test/u2' });
  });

  it('refuses an event type twice, and * with others (400 naming enabled_events)', async () => {
    for (const enabled_events of [
      ['link.opened', 'link.opened'],
      ['*', 'link.opened'],
    ]) {
      const res = await create(a, { url: 'https://crm.test/x', enabled_events });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors[0].pointer).toBe('/body/enabled_events');
    }
    const unknown = await create(a, { url: 'https://crm.test/x', enabled_events: ['webhook_endpoint.test'] });
    expect(unknown.statusCode).toBe(400);
  });

  it('H8 a description with NUL or a lone surrogate: 400 naming description, nothing created', async () => {
    const before = await rowCount();
    for (const description of ['a\u0000b', 'a\ud800b']) {
      const res = await create(a, { url: 'https://crm.test/h8', enabled_events: ['link.opened'], description });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors[0].pointer).toBe('/body/description');
    }
    expect(await rowCount()).toBe(before);
  });

  it('deletes an endpoint: 204, then 404', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/d', enabled_events: ['link.opened'] });
    expect((await app.inject({ method: 'DELETE', url: `${BASE}/${created.id}`, headers: a.connect })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: `${BASE}/${created.id}`, headers: a.connect })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `${BASE}/${created.id}`, headers: a.connect })).statusCode).toBe(404);
  });

  it('rotates with the overlap asked for; 0 retires the previous secret at once', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/r', enabled_events: ['link.opened'] });
    const rotated = (
      await app.inject({ method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, headers: a.connect, payload: { overlap_seconds: 3600 } })
    ).json();
    const expires = Date.parse(rotated.previous_secret_expires_at);
    expect(expires - Date.now()).toBeGreaterThan(3590_000);
    expect(expires - Date.now()).toBeLessThan(3610_000);
    expect(rotated.secret_prefix).toBe(rotated.secret.slice(0, 12));
    const def = (await app.inject({ method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, headers: a.connect })).json();
    expect(Date.parse(def.previous_secret_expires_at) - Date.now()).toBeGreaterThan(86_390_000);
    const now = (await app.inject({ method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, headers: a.connect, payload: { overlap_seconds: 0 } })).json();
    expect(now.previous_secret_expires_at).toBeNull();
  });

  it('402 plan-limit past 16 endpoints, nothing created', async () => {
    const t = await tenant(app);
    for (let i = 0; i < 16; i++) await createConnectEndpoint(app, t, { url: `https://crm.test/cap/${i}`, enabled_events: ['link.opened'] });
    const before = await rowCount();
    const res = await create(t, { url: 'https://crm.test/cap/17', enabled_events: ['link.opened'] });
    expect(res.statusCode).toBe(402);
    expect(res.json().type).toBe('https://chatapp.example/problems/plan-limit');
    expect(await rowCount()).toBe(before);
  });

  it('A7 a token without webhooks:write: 403 naming the scope', async () => {
    const token = await connectBearer(app, a.workspaceId, ['documents:write', 'links:write', 'analytics:read']);
    for (const [method, url] of [
      ['GET', BASE],
      ['POST', BASE],
      ['GET', `${BASE}/whe_0000000000000000`],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: bearer(token),
        ...(method === 'POST' ? { payload: { url: 'https://crm.test/a7', enabled_events: ['*'] } } : {}),
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/forbidden', required_scope: 'webhooks:write' });
      expect(String(res.headers['www-authenticate'])).toContain('insufficient_scope');
    }
  });

  it('B1 another workspace’s endpoint ids answer 404, the same body as an unknown id; nothing changes', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/b1', enabled_events: ['link.opened'] });
    const unknown = await app.inject({ method: 'GET', url: `${BASE}/whe_0000000000000000`, headers: b.connect });
    const calls = [
      { method: 'GET', url: `${BASE}/${created.id}` },
      { method: 'PATCH', url: `${BASE}/${created.id}`, payload: { status: 'disabled' } },
      { method: 'DELETE', url: `${BASE}/${created.id}` },
      { method: 'POST', url: `${BASE}/${created.id}/rotate-secret`, payload: {} },
      { method: 'POST', url: `${BASE}/${created.id}/test` },
      { method: 'GET', url: `${BASE}/${created.id}/deliveries` },
    ] as const;
    for (const call of calls) {
      const res = await app.inject({ ...call, headers: b.connect });
      expect(res.statusCode, `${call.method} ${call.url}`).toBe(404);
      expect(sameness(res.json())).toEqual(sameness(unknown.json()));
    }
    const after = await app.inject({ method: 'GET', url: `${BASE}/${created.id}`, headers: a.connect });
    expect(after.json()).toMatchObject({ status: 'enabled', secret_prefix: created.secret_prefix });
    expect(await app.platform.store.db.selectFrom('outbox').select('id').where('endpoint_id', '=', created.id).execute()).toHaveLength(0);
  });
});

describe('B8 malformed ids', () => {
  it('B8 abc, 500 characters, %00 in every id position: 400 or 404, never 500', async () => {
    const created = await createConnectEndpoint(app, a, { url: 'https://crm.test/b8', enabled_events: ['link.opened'] });
    for (const bad of ['abc', `whe_${'a'.repeat(496)}`, 'whe_abc%00def', '%00']) {
      for (const url of [`${BASE}/${bad}`, `${BASE}/${bad}/deliveries`, `${BASE}/${created.id}/deliveries/${bad}`, `/api/webhook-endpoints/${bad}`]) {
        const res = await app.inject({ method: 'GET', url, headers: url.startsWith(BASE) ? a.connect : a.messaging });
        expect([400, 404], `${url.slice(0, 80)} → ${res.statusCode}`).toContain(res.statusCode);
        expect(res.headers['content-type']).toContain('application/problem+json');
      }
    }
  });
});

describe('G URL policy when an endpoint is accepted', () => {
  let g: Tenant;
  let target: { id: string };
  beforeAll(async () => {
    g = await tenant(app);
    target = await createConnectEndpoint(app, g, { url: 'https://crm.test/g', enabled_events: ['link.opened'] });
  });

  const unsafe = async (url: string, how: 'create' | 'update' = 'create') => {
    const before = await rowCount();
    let res;
    if (how === 'create') res = await create(g, { url, enabled_events: ['link.opened'] });
    else {
      const created = target;
      res = await app.inject({ method: 'PATCH', url: `${BASE}/${created.id}`, headers: g.connect, payload: { url } });
      const row = await app.platform.store.db.selectFrom('webhook_endpoints').select('url').where('id', '=', created.id).executeTakeFirstOrThrow();
      expect(row.url).toBe('https://crm.test/g');
      return res;
    }
    expect(await rowCount()).toBe(before);
    return res;
  };

  // Tests run in development mode (private targets allowed for local receivers), so the private
  // rows are checked in production mode below; these hold in every mode.
  it('G3 metadata addresses: 422 unsafe-url naming url, on create and update', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/']) {
      for (const how of ['create', 'update'] as const) {
        const res = await unsafe(url, how);
        expect(res.statusCode, `${how} ${url}`).toBe(422);
        expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/unsafe-url', errors: [{ pointer: '/body/url' }] });
      }
    }
  });

  it('G1 0.0.0.0 and http://0/ (unspecified): 422 in every mode', async () => {
    for (const url of ['http://0.0.0.0/hook', 'http://0/']) expect((await unsafe(url)).statusCode, url).toBe(422);
  });

  it('G11 file:, gopher:, data:, ftp:, javascript:, ws: answer 400 before any I/O', async () => {
    for (const url of ['file:///etc/passwd', 'gopher://crm.test/', 'data:text/plain,hi', 'ftp://crm.test/', 'javascript:alert(1)', 'ws://crm.test/']) {
      for (const how of ['create', 'update'] as const) {
        const res = await unsafe(url, how);
        expect(res.statusCode, `${how} ${url}`).toBe(400);
        expect(res.json().type).toBe('https://chatapp.example/problems/validation');
      }
    }
  });

  it('G12 ports 0 and 65536 answer 400', async () => {
    for (const url of ['https://crm.test:0/', 'https://crm.test:65536/']) expect((await unsafe(url)).statusCode, url).toBe(400);
  });

  it('G13 CR/LF inside, or over 2,048 characters: 400', async () => {
    for (const url of ['https://crm.test/a\r\nX-Injected: 1', 'https://crm.test/a\nb', `https://crm.test/${'a'.repeat(2040)}`]) {
      for (const how of ['create', 'update'] as const) expect((await unsafe(url, how)).statusCode, `${how} ${JSON.stringify(url.slice(0, 40))}`).toBe(400);
    }
  });
});

describe('G in production mode', () => {
  let prod: FastifyInstance;
  let headers: Record<string, string>;

  beforeAll(async () => {
    prod = await buildShared({
      env: { NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(48), ALLOW_PRIVATE_URLS: 'false' },
      overrides: {
        lookup: async (host) => [
          { address: host === 'metadata.google.internal' ? '169.254.169.254' : host === 'internal.crm.test' ? '10.0.0.5' : '93.184.216.34', family: 4 },
        ],
      },
    });
    const t = await tenant(prod);
    headers = t.connect;
  }, 60_000);

  const post = (url: string) => prod.inject({ method: 'POST', url: BASE, headers, payload: { url, enabled_events: ['link.opened'] } });

  it('G1 loopback and localhost: 422', async () => {
    for (const url of ['https://127.0.0.1/hook', 'https://localhost/hook', 'https://0.0.0.0/', 'https://127.0.0.1:3000/']) {
      const res = await post(url);
      expect(res.statusCode, url).toBe(422);
      expect(res.json().errors[0].pointer).toBe('/body/url');
    }
  });

  it('G2 private ranges: 422', async () => {
    for (const host of ['10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1'])
      expect((await post(`https://${host}/`)).statusCode, host).toBe(422);
  });

  it('G3 metadata by name (stub → 169.254.169.254), G8 a name resolving to a private address: 422', async () => {
    expect((await post('https://metadata.google.internal/computeMetadata/v1/')).statusCode).toBe(422);
    expect((await post('https://internal.crm.test/hook')).statusCode).toBe(422);
  });

  it('G12 http: and ports 22, 25, 6379: 422', async () => {
    for (const url of ['http://crm.test/hook', 'https://crm.test:22/', 'https://crm.test:25/', 'https://crm.test:6379/'])
      expect((await post(url)).statusCode, url).toBe(422);
  });

  it('a public https URL is accepted', async () => {
    expect((await post('https://crm.test/hook')).statusCode).toBe(201);
  });
});
