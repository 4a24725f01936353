// Links over the Connect API: create (phone in E.164, one active link per recipient, expiry,
// no tenant field), list with filters and cursors, get, revoke; scopes and isolation (bad-inputs B1, B4).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { LINKS, newDocument, newLink, PROBLEM, snapshot, tenant, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect links', () => {
  let app: FastifyInstance;
  let a: Tenant;
  let b: Tenant;
  let docId: string;
  beforeAll(async () => {
    app = await buildShared();
    a = await tenant(app, 'links-a');
    b = await tenant(app, 'links-b');
    docId = (await newDocument(app, a)).id;
  });

  const create = (who: Tenant, body: Record<string, unknown>) => app.inject({ method: 'POST', url: LINKS, headers: who.auth, payload: body });

  it('create: 201, an unguessable viewer URL (22 base62), the phone in E.164, download off by default', async () => {
    const res = await create(a, { document_id: docId, external_id: 'crm-1', recipient: { phone: '+1 (415) 555-0123' } });
    expect(res.statusCode, res.body).toBe(201);
    const link = res.json();
    expect(link).toMatchObject({
      document_id: docId,
      external_id: 'crm-1',
      recipient: { phone: '+14155550123' },
      status: 'active',
      allow_download: false,
      expires_at: null,
      revoked_at: null,
      last_opened_at: null,
    });
    expect(link.id).toMatch(/^lnk_[0-9A-Za-z]{20}$/);
    expect(link.url).toMatch(new RegExp(`^${app.config.publicUrl}/l/[0-9A-Za-z]{22}$`));
  });

  it('H5 an invalid phone: 400 naming /body/recipient/phone; nothing created', async () => {
    const before = await snapshot(app);
    for (const phone of ['12345', '+1555', '+999999999999999999', '+1-555-0100-abc']) {
      const res = await create(a, { document_id: docId, external_id: 'crm-h5', recipient: { phone } });
      expect(res.statusCode, phone).toBe(400);
      expect(JSON.stringify(res.json().errors), phone).toContain('/body/recipient');
    }
    expect(await snapshot(app)).toEqual(before);
  });

  it('a recipient without phone or email, or with an unknown field: 400', async () => {
    for (const recipient of [{}, { phone: '+14155550123', name: 'x' }]) {
      const res = await create(a, { document_id: docId, external_id: 'crm-r', recipient });
      expect(res.statusCode).toBe(400);
    }
  });

  it('B4 a body naming org_id, organization_id or tenant_id: 400 validation; nothing created', async () => {
    const before = await snapshot(app);
    for (const field of ['org_id', 'organization_id', 'tenant_id']) {
      const res = await create(a, { document_id: docId, external_id: 'crm-b4', recipient: { email: 'x@example.com' }, [field]: b.workspaceId });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors[0].pointer).toBe(`/body/${field}`);
    }
    expect(await snapshot(app)).toEqual(before);
  });

  it('a second active link for the same document and external_id: 409 naming the first; after revoking, allowed', async () => {
    const first = await newLink(app, a, docId, { external_id: 'crm-dup' });
    const again = await create(a, { document_id: docId, external_id: 'crm-dup', recipient: { email: 'x@example.com' } });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ type: `${PROBLEM}conflict` });
    expect(again.json().detail).toContain(first.id);
    await app.inject({ method: 'POST', url: `${LINKS}/${first.id}/revoke`, headers: a.auth });
    expect((await create(a, { document_id: docId, external_id: 'crm-dup', recipient: { email: 'x@example.com' } })).statusCode).toBe(201);
  });

  it('expires_at in the past: 400 naming it', async () => {
    const res = await create(a, { document_id: docId, external_id: 'crm-exp', recipient: { email: 'x@example.com' }, expires_at: '2020-01-01T00:00:00Z' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/expires_at');
  });

  it('without links:write: 403 naming the scope', async () => {
    const docsOnly = await tenant(app, 'links-docs-only', ['documents:write']);
    const res = await app.inject({ url: LINKS, headers: docsOnly.auth });
    expect(res.statusCode).toBe(403);
    expect(res.json().required_scope).toBe('links:write');
  });

  it('list: newest first, filtered by document, external_id and status, paginated', async () => {
    const c = await tenant(app, 'links-list');
    const d1 = (await newDocument(app, c)).id;
    const d2 = (await newDocument(app, c)).id;
    const l1 = await newLink(app, c, d1, { external_id: 'p-1' });
    const l2 = await newLink(app, c, d1, { external_id: 'p-2' });
    const l3 = await newLink(app, c, d2, { external_id: 'p-1' });
    await app.inject({ method: 'POST', url: `${LINKS}/${l2.id}/revoke`, headers: c.auth });
    const ids = async (query: string) => (await app.inject({ url: `${LINKS}?${query}`, headers: c.auth })).json().data.map((l: { id: string }) => l.id);
    expect(await ids('')).toEqual([l3.id, l2.id, l1.id]);
    expect(await ids(`document_id=${d1}`)).toEqual([l2.id, l1.id]);
    expect(await ids('external_id=p-1')).toEqual([l3.id, l1.id]);
    expect(await ids('status=revoked')).toEqual([l2.id]);
    expect(await ids('status=active')).toEqual([l3.id, l1.id]);
    expect(await ids('status=expired')).toEqual([]);
    const page = (await app.inject({ url: `${LINKS}?limit=2`, headers: c.auth })).json();
    expect(page.has_more).toBe(true);
    const rest = (await app.inject({ url: `${LINKS}?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`, headers: c.auth })).json();
    expect(rest.data.map((l: { id: string }) => l.id)).toEqual([l1.id]);
    expect((await app.inject({ url: `${LINKS}?document_id=doc_0000000000000000`, headers: c.auth })).statusCode).toBe(404);
  });

  it('J1 filters holding SQL and wildcards are matched as text', async () => {
    for (const value of ["' OR 1=1--", '%', '_']) {
      const res = await app.inject({ url: `${LINKS}?external_id=${encodeURIComponent(value)}`, headers: a.auth });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toEqual([]);
    }
  });

  it('get and revoke: revoke is idempotent (the same link, revoked_at unchanged)', async () => {
    const link = await newLink(app, a, docId);
    expect((await app.inject({ url: `${LINKS}/${link.id}`, headers: a.auth })).json()).toEqual(link);
    const first = (await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth })).json();
    expect(first).toMatchObject({ status: 'revoked' });
    const second = await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual(first);
  });

  it('B1 another workspace link id: get, revoke, analytics, sessions answer the same 404 as an unknown id; nothing changes', async () => {
    const link = await newLink(app, a, docId);
    const before = await snapshot(app);
    const strip = (body: Record<string, unknown>) => ({ ...body, instance: undefined, request_id: undefined });
    const unknown = strip((await app.inject({ url: `${LINKS}/lnk_0000000000000000`, headers: b.auth })).json());
    for (const [method, url] of [
      ['GET', `${LINKS}/${link.id}`],
      ['POST', `${LINKS}/${link.id}/revoke`],
      ['GET', `${LINKS}/${link.id}/analytics`],
      ['GET', `${LINKS}/${link.id}/sessions`],
    ] as const) {
      const res = await app.inject({ method, url, headers: b.auth });
      expect(res.statusCode, url).toBe(404);
      expect(strip(res.json())).toEqual(unknown);
    }
    expect(await snapshot(app)).toEqual(before);
    expect((await app.inject({ url: `${LINKS}/${link.id}`, headers: a.auth })).json().status).toBe('active');
  });
});
