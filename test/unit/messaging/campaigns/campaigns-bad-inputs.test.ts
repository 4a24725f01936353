// Bad inputs of the campaign operations (bad-inputs bad-inputs B1, B3, G, bad-inputs H14, K8) and the state
// machine: each refusal is a problem naming the field and changes nothing (no campaign, no
// recipient, no outbox row, no message).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { addContacts, call, tableCounts, tag, until, workspace, type Workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

const PROBLEMS = 'https://chatapp.example/problems/';
let app: FastifyInstance;
let a: Workspace;
let b: Workspace;
let aContacts: string[];

beforeAll(async () => {
  // Private targets refused as in production, so the media URL guard is what answers (group G);
  // a small recipient cap for bad-inputs K8.
  app = await buildShared({ env: { ALLOW_PRIVATE_URLS: 'false', RATE_LIMIT_IP_PER_MINUTE: '1000', CAMPAIGN_MAX_RECIPIENTS: '50' } });
  a = await workspace(app);
  b = await workspace(app);
  aContacts = await addContacts(app.platform.store.db, a.workspaceId, 3);
  await addContacts(app.platform.store.db, b.workspaceId, 3, '+49152');
  await tag(app.platform.store.db, a.workspaceId, 'vip', aContacts);
});

const body = (w: Workspace, extra: Record<string, unknown> = {}) => ({
  name: 'Offer',
  chatapp_phone_number: w.phone,
  audience: { type: 'all_contacts' },
  template: { name: 'welcome_offer', language: 'en_US' },
  ...extra,
});

/** Sends as B; expects `status`, the problem `type` and a pointer; nothing changed anywhere. */
async function refused(payload: unknown, status: number, type: string, pointer?: string) {
  const before = await tableCounts(app.platform.store.db);
  const res = await call(app, b.key)('POST', '/api/campaigns', payload);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toContain('application/problem+json');
  expect(res.json().type).toBe(`${PROBLEMS}${type}`);
  if (pointer) expect(res.json().errors?.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  expect(await tableCounts(app.platform.store.db)).toEqual(before);
  return res.json();
}

describe('createCampaign refusals', () => {
  it("B3 A's sender number in B's body: 404 naming chatapp_phone_number", async () => {
    await refused(body(b, { chatapp_phone_number: a.phone }), 404, 'not-found', '/body/chatapp_phone_number');
  });

  it('H5 a sender that is not a phone number: 400', async () => {
    await refused(body(b, { chatapp_phone_number: '12345' }), 400, 'validation', '/body/chatapp_phone_number');
  });

  it("B3 A's contacts in B's audience: 404 naming contact_ids", async () => {
    await refused(body(b, { audience: { type: 'contacts', contact_ids: [aContacts[0]] } }), 404, 'not-found', '/body/audience/contact_ids');
  });

  it("B3 A's tag name in B's audience: 404 naming tags", async () => {
    await refused(body(b, { audience: { type: 'tags', tags: ['vip'] } }), 404, 'not-found', '/body/audience/tags');
  });

  it("B3 A's segment in B's audience: 404 naming segment_id", async () => {
    const segment = newId('seg');
    await app.platform.store.db
      .insertInto('segments')
      .values({ id: segment, workspace_id: a.workspaceId, name: 'All', filter: JSON.stringify({ match: 'all', conditions: [] }) })
      .execute();
    await refused(body(b, { audience: { type: 'segment', segment_id: segment } }), 404, 'not-found', '/body/audience/segment_id');
  });

  it("B3 A's uploaded media id in B's carousel: 404", async () => {
    const id = newId('med');
    await app.platform.store.db
      .insertInto('uploaded_media')
      .values({ id, workspace_id: a.workspaceId, provider_media_id: '1', mime_type: 'image/jpeg', size_bytes: 1 })
      .execute();
    const template = {
      name: 'new_arrivals',
      language: 'en_US',
      body: ['x'],
      carousel: { type: 'media', cards: [{ header: { type: 'image', media_id: id } }, { header: { type: 'image', media_id: id } }] },
    };
    await refused(body(b, { template }), 404, 'not-found');
  });

  it('unknown template: 404 naming template/name', async () => {
    await refused(body(b, { template: { name: 'no_such_template', language: 'en_US' } }), 404, 'not-found', '/body/template/name');
  });

  it('template not APPROVED: 422 naming template/name', async () => {
    const p = await refused(body(b, { template: { name: 'spring_rejected', language: 'en_US' } }), 422, 'unprocessable', '/body/template/name');
    expect(p.detail).toContain('REJECTED');
  });

  it('H14 body values not matching the template: 422 naming template/body', async () => {
    await refused(body(b, { template: { name: 'black_friday_coupon', language: 'en_US', body: ['only one'] } }), 422, 'unprocessable', '/body/template/body');
  });

  it('H14 media header template without its media: 422 naming template/header', async () => {
    await refused(body(b, { template: { name: 'invoice_ready', language: 'en_US', body: ['a', 'b'] } }), 422, 'unprocessable', '/body/template/header');
  });

  it('H14 a media header with both media_url and media_id: 400', async () => {
    const header = { type: 'document', media_url: 'https://cdn.example.com/a.pdf', media_id: 'med_4Kp8Xq2NmT7vL3sR00' };
    await refused(body(b, { template: { name: 'invoice_ready', language: 'en_US', header, body: ['a', 'b'] } }), 400, 'validation', '/body/template/header');
  });

  it('H14 a past schedule: 422 naming scheduled_at', async () => {
    await refused(body(b, { scheduled_at: new Date(Date.now() - 60_000).toISOString() }), 422, 'unprocessable', '/body/scheduled_at');
  });

  it('H14 an offer that already expired: 422 naming its expires_at', async () => {
    const template = {
      name: 'flash_sale',
      language: 'en_US',
      header: { type: 'image', media_url: 'https://cdn.example.com/a.jpg' },
      body: ['x'],
      limited_time_offer: { expires_at: '2020-01-01T00:00:00Z' },
    };
    await refused(body(b, { template }), 422, 'unprocessable', '/body/template/limited_time_offer/expires_at');
  });

  it('H14 2026-02-30 as scheduled_at: 400', async () => {
    await refused(body(b, { scheduled_at: '2026-02-30T08:00:00Z' }), 400, 'validation');
  });

  it.each([
    ['G1 loopback', 'https://127.0.0.1/a.pdf', 422, 'unsafe-url'],
    ['G2 private', 'https://10.0.0.1/a.pdf', 422, 'unsafe-url'],
    ['G3 metadata', 'https://169.254.169.254/latest/meta-data/', 422, 'unsafe-url'],
    ['G12 a port outside 80 and 443', 'https://cdn.example.com:6379/a.pdf', 422, 'unsafe-url'],
  ])('%s media_url: %i %s naming the field, no connection', async (_name, url, status, type) => {
    const header = { type: 'document', media_url: url };
    await refused(
      body(b, { template: { name: 'invoice_ready', language: 'en_US', header, body: ['a', 'b'] } }),
      status,
      type,
      '/body/template/header/media_url',
    );
  });

  it('G11 file: media_url: 400', async () => {
    const header = { type: 'document', media_url: 'file:///etc/passwd' };
    await refused(body(b, { template: { name: 'invoice_ready', language: 'en_US', header, body: ['a', 'b'] } }), 400, 'validation');
  });

  it('product carousel with a catalog the workspace does not have: 404 naming the catalog', async () => {
    const carousel = {
      type: 'product',
      cards: [
        { catalog_id: 'cat_6Jq2Wn8KxL4tR7vP', product_retailer_id: 'A' },
        { catalog_id: 'cat_6Jq2Wn8KxL4tR7vP', product_retailer_id: 'B' },
      ],
    };
    await refused(
      body(b, { template: { name: 'new_arrivals', language: 'en_US', body: ['x'], carousel } }),
      404,
      'not-found',
      '/body/template/carousel/cards/0/catalog_id',
    );
  });

  it('K8 an audience over the recipient cap: 400, no campaign, no recipient, no job', async () => {
    await addContacts(app.platform.store.db, b.workspaceId, 60, '+49153');
    const p = await refused(body(b), 400, 'validation', '/body/audience');
    expect(p.detail).toContain('at most 50');
    await app.platform.store.db.deleteFrom('contacts').where('workspace_id', '=', b.workspaceId).where('phone', 'like', '+49153%').execute();
  });

  it('H6 more than 10,000 contact ids: 400 (maxItems)', async () => {
    const ids = Array.from({ length: 10_001 }, () => newId('ct'));
    await refused(body(b, { audience: { type: 'contacts', contact_ids: ids } }), 400, 'validation');
  });

  it('H3 an unknown property: 400', async () => {
    await refused({ ...body(b), isAdmin: true }, 400, 'validation');
  });

  it('rate_per_second above the number: held at the number rate', async () => {
    await app.platform.store.db.updateTable('phone_numbers').set({ messages_per_second: 20 }).where('id', '=', b.numberId).execute();
    const res = await call(app, b.key)('POST', '/api/campaigns', body(b, { rate_per_second: 500, draft: true }));
    expect(res.statusCode).toBe(201);
    expect(res.json().rate_per_second).toBe(20);
    await app.platform.store.db.updateTable('phone_numbers').set({ messages_per_second: 80 }).where('id', '=', b.numberId).execute();
  });
});

describe('B1 campaign ids of another workspace', () => {
  it.each(['GET ', 'POST /start', 'POST /pause', 'POST /resume', 'POST /cancel'])('%s: 404, same body as an unknown id', async (op) => {
    const created = (await call(app, a.key)('POST', '/api/campaigns', body(a, { draft: true }))).json();
    const [method, suffix] = op.split(' ') as ['GET' | 'POST', string];
    const theirs = await call(app, b.key)(method, `/api/campaigns/${created.id}${suffix}`);
    const unknown = await call(app, b.key)(method, `/api/campaigns/cmp_00000000000000000000${suffix}`);
    expect(theirs.statusCode).toBe(404);
    const strip = (x: Record<string, unknown>) => ({ ...x, request_id: undefined, instance: undefined, detail: undefined });
    expect(strip(theirs.json())).toEqual(strip(unknown.json()));
    expect(theirs.json().detail).toBe(`No campaign ${created.id} in this workspace.`);
    expect((await call(app, a.key)('GET', `/api/campaigns/${created.id}`)).json().status).toBe('draft');
  });

  it('B8 malformed ids: 404 or 400, never 500', async () => {
    for (const id of ['abc', 'x'.repeat(500), 'cmp_%00']) {
      const res = await call(app, b.key)('GET', `/api/campaigns/${id}`);
      expect([400, 404]).toContain(res.statusCode);
    }
  });
});

describe('state transitions', () => {
  async function inState(status: string): Promise<string> {
    const api = call(app, a.key);
    const scheduled = { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() };
    const id = (await api('POST', '/api/campaigns', body(a, status === 'draft' ? { draft: true } : scheduled))).json().id;
    if (status === 'paused') await api('POST', `/api/campaigns/${id}/pause`);
    if (status === 'cancelled') await api('POST', `/api/campaigns/${id}/cancel`);
    if (status === 'completed') {
      await app.platform.store.db.updateTable('campaigns').set({ status: 'completed' }).where('id', '=', id).execute();
    }
    return id;
  }

  // What each operation answers from each state: a status for 200, 409 otherwise.
  const table: [string, Record<string, string | 409>][] = [
    ['draft', { start: 'sending', pause: 409, resume: 409, cancel: 'cancelled' }],
    ['scheduled', { start: 409, pause: 'paused', resume: 409, cancel: 'cancelled' }],
    ['paused', { start: 409, pause: 409, resume: 'scheduled', cancel: 'cancelled' }],
    ['cancelled', { start: 409, pause: 409, resume: 409, cancel: 409 }],
    ['completed', { start: 409, pause: 409, resume: 409, cancel: 409 }],
  ];
  for (const [from, ops] of table) {
    for (const [op, expected] of Object.entries(ops)) {
      it(`${op} on ${from}: ${expected === 409 ? '409 conflict' : expected}`, async () => {
        const id = await inState(from);
        const res = await call(app, a.key)('POST', `/api/campaigns/${id}/${op}`);
        if (expected === 409) {
          expect(res.statusCode).toBe(409);
          expect(res.json().type).toBe(`${PROBLEMS}conflict`);
          expect((await call(app, a.key)('GET', `/api/campaigns/${id}`)).json().status).toBe(from);
        } else {
          expect(res.statusCode, res.body).toBe(200);
          expect(res.json().status).toBe(expected);
        }
      });
    }
  }

  it('pause, resume and cancel while sending take effect within a batch', async () => {
    const db = app.platform.store.db;
    const w = await workspace(app);
    await db.updateTable('phone_numbers').set({ messages_per_second: 5 }).where('id', '=', w.numberId).execute();
    await addContacts(db, w.workspaceId, 40);
    const api = call(app, w.key);
    const c = (await api('POST', '/api/campaigns', body(w))).json();
    const out = (p: { sent: number; delivered: number; read: number }) => p.sent + p.delivered + p.read;
    await until(async () => out((await api('GET', `/api/campaigns/${c.id}`)).json().progress) > 0, 5000, 'first sends');
    expect((await api('POST', `/api/campaigns/${c.id}/pause`)).json().status).toBe('paused');
    await elapse(1500, 'a batch in flight at the pause (at most ~0.5 s) finishes, with no event saying so');
    const paused = (await api('GET', `/api/campaigns/${c.id}`)).json().progress;
    await elapse(1000, 'absence: a paused campaign sends nothing more');
    // Statuses of what was sent may still move messages on (sent, delivered, read); none is added.
    const later = (await api('GET', `/api/campaigns/${c.id}`)).json().progress;
    expect({ queued: later.queued, out: out(later), failed: later.failed }).toEqual({ queued: paused.queued, out: out(paused), failed: paused.failed });
    expect(paused.queued).toBeGreaterThan(0);
    expect((await api('POST', `/api/campaigns/${c.id}/resume`)).json().status).toBe('sending');
    await until(async () => (await api('GET', `/api/campaigns/${c.id}`)).json().progress.queued < paused.queued, 5000, 'sending again');
    const cancelled = (await api('POST', `/api/campaigns/${c.id}/cancel`)).json();
    expect(cancelled.status).toBe('cancelled');
    await elapse(1500, 'a batch in flight at the cancel finishes; then absence of further sends');
    const after = (await api('GET', `/api/campaigns/${c.id}`)).json().progress;
    expect(after.queued).toBe(0);
    const skipped = await db.selectFrom('campaign_recipients').select('id').where('campaign_id', '=', c.id).where('state', '=', 'skipped').execute();
    expect(skipped.length).toBeGreaterThan(0);
    expect(after.sent + after.delivered + after.read + after.failed + skipped.length).toBe(40);
  });
});
