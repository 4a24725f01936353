// Contacts: create, get, update; numbers, tags and typed custom fields; the bad inputs of
// groups B, H and J that reach a contact body or path.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { crmCounts, PROBLEM, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
let n = 0;
/** A fresh valid number for each contact (+49 151 1000 0000 + n). */
const phone = () => `+4915110${String(++n).padStart(6, '0')}`;

beforeAll(async () => {
  app = await buildShared();
  [a, b] = [await tenant(app), await tenant(app)];
  await a.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
  await a.call('POST', '/api/custom-fields', { key: 'orders', label: 'Orders', type: 'number' });
  await a.call('POST', '/api/custom-fields', { key: 'birthday', label: 'Birthday', type: 'date' });
  await a.call('POST', '/api/custom-fields', { key: 'plan', label: 'Plan', type: 'choice', choices: ['free', 'pro'] });
});

async function refused(t: Tenant, method: string, url: string, payload: unknown, status: number, pointer?: string) {
  const before = await crmCounts(app);
  const res = await t.call(method, url, payload);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  if (pointer) expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  expect(await crmCounts(app)).toEqual(before);
  return res.body;
}

describe('create, get, update', () => {
  it('creates with the number in E.164, tags (created when new) and typed custom fields; gets it back', async () => {
    const res = await a.call('POST', '/api/contacts', {
      contact_no: '+49 151 1234 5678',
      name: 'Lena',
      email: 'lena@example.com',
      tags: ['vip', 'Newsletter'],
      custom_fields: { city: 'Berlin', orders: 3, birthday: '1990-02-28', plan: 'pro' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      contact_no: '+4915112345678',
      name: 'Lena',
      tags: ['Newsletter', 'vip'],
      custom_fields: { city: 'Berlin', orders: 3, birthday: '1990-02-28', plan: 'pro' },
      last_inbound_at: null,
      window_expires_at: null,
    });
    const got = await a.call('GET', `/api/contacts/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toMatch(/^application\/json/);
    expect(got.body).toEqual(res.body);
    expect((await a.call('GET', '/api/contacts')).headers['content-type']).toMatch(/^application\/json/);
  });

  it('H5 valid numbers in any layout are stored as E.164; the same number again is a 409 naming the contact, no constraint name', async () => {
    const first = await a.call('POST', '/api/contacts', { contact_no: '+1 (415) 555-0123' });
    expect(first.body.contact_no).toBe('+14155550123');
    for (const layout of ['14155550123', '+1.415.555.0123', '+1 415 555 0123']) {
      const body = await refused(a, 'POST', '/api/contacts', { contact_no: layout }, 409, '/body/contact_no');
      expect(body.type).toBe(`${PROBLEM}conflict`);
      expect(body.detail).toContain(first.body.id);
      expect(JSON.stringify(body)).not.toMatch(/contacts_workspace|unique|constraint|23505/i);
    }
    // B has its own numbers: the same number is fine there
    expect((await b.call('POST', '/api/contacts', { contact_no: '+14155550123' })).status).toBe(201);
  });

  it('M3 concurrent creates of one number: one 201, the others 409 conflict (never 500)', async () => {
    const number = phone();
    const answers = await Promise.all(Array.from({ length: 5 }, () => a.call('POST', '/api/contacts', { contact_no: number, tags: ['race'] })));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    for (const r of answers.filter((x) => x.status === 409)) expect(r.body.type).toBe(`${PROBLEM}conflict`);
  });

  it('H5 invalid numbers (12345, +1555, +999999999999999999, +1-555-0100-abc): 400 at /body/contact_no', async () => {
    for (const bad of ['12345', '+1555', '+999999999999999999', '+1-555-0100-abc']) {
      const body = await refused(a, 'POST', '/api/contacts', { contact_no: bad }, 400, '/body/contact_no');
      expect(body.type).toBe(`${PROBLEM}validation`);
    }
  });

  it('H2 contact_no missing: 400 naming it', async () => {
    await refused(a, 'POST', '/api/contacts', { name: 'No number' }, 400, '/body/contact_no');
  });

  it('H3 unknown property isAdmin: 400 naming it, never stripped', async () => {
    await refused(a, 'POST', '/api/contacts', { contact_no: phone(), isAdmin: true }, 400, '/body/isAdmin');
  });

  it('H1 wrong types (name: 42, tags: "vip"): 400 per field, not coerced', async () => {
    const body = await refused(a, 'POST', '/api/contacts', { contact_no: phone(), name: 42, tags: 'vip' }, 400);
    expect(body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(expect.arrayContaining(['/body/name', '/body/tags']));
  });

  it('H6 a 100,000-character name and 10,000 tags: 400 (maxLength, maxItems), never truncated', async () => {
    await refused(a, 'POST', '/api/contacts', { contact_no: phone(), name: 'x'.repeat(100_000) }, 400, '/body/name');
    await refused(a, 'POST', '/api/contacts', { contact_no: phone(), tags: Array.from({ length: 10_000 }, (_, i) => `t${i}`) }, 400, '/body/tags');
  });

  it('H8 NUL and a lone surrogate: 400 naming the field; RTL, zero-width, combining marks and emoji round-trip byte-exact', async () => {
    await refused(a, 'POST', '/api/contacts', { contact_no: phone(), name: 'Le\u0000na' }, 400, '/body/name');
    const raw = `{"contact_no":"${phone()}","name":"Lena \\ud800"}`;
    await refused(a, 'POST', '/api/contacts', raw, 400, '/body/name');
    await refused(a, 'POST', '/api/contacts', { contact_no: phone(), custom_fields: { city: 'Ber\u0000lin' } }, 400, '/body/custom_fields/city');
    const name = '\u202Eanel \u200B Zoe\u0301 👩🏽‍💻 مرحبا';
    const created = await a.call('POST', '/api/contacts', { contact_no: phone(), name, tags: ['🎉 party'], custom_fields: { city: 'Zürich\u200D' } });
    expect(created.status).toBe(201);
    const got = await a.call('GET', `/api/contacts/${created.body.id}`);
    expect(got.body.name).toBe(name);
    expect(got.body.tags).toEqual(['🎉 party']);
    expect(got.body.custom_fields.city).toBe('Zürich\u200D');
  });

  it('custom field values are checked against their types: 422 naming each key', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ orders: '3' }, 'orders'],
      [{ birthday: '2026-02-30' }, 'birthday'],
      [{ birthday: 19900228 }, 'birthday'],
      [{ plan: 'gold' }, 'plan'],
      [{ city: 'x'.repeat(1001) }, 'city'],
      [{ shoe_size: 42 }, 'shoe_size'],
    ];
    for (const [custom_fields, key] of cases) {
      const body = await refused(a, 'POST', '/api/contacts', { contact_no: phone(), custom_fields }, 422, `/body/custom_fields/${key}`);
      expect(body.type).toBe(`${PROBLEM}unprocessable`);
    }
  });

  it('J6 __proto__ and constructor keys: refused, Object.prototype untouched', async () => {
    await refused(a, 'POST', '/api/contacts', `{"contact_no":"${phone()}","__proto__":{"polluted":true}}`, 400);
    await refused(a, 'POST', '/api/contacts', `{"contact_no":"${phone()}","custom_fields":{"__proto__":"x"}}`, 400);
    await refused(a, 'POST', '/api/contacts', `{"contact_no":"${phone()}","custom_fields":{"constructor":{"prototype":{"polluted":true}}}}`, 400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('update: only the fields present change; tags replace; custom fields merge, null removes; name null clears', async () => {
    const created = await a.call('POST', '/api/contacts', {
      contact_no: phone(),
      name: 'Max',
      email: 'max@example.com',
      tags: ['a', 'b'],
      custom_fields: { city: 'Köln', orders: 1 },
    });
    const id = created.body.id;
    const res = await a.call('PUT', `/api/contacts/${id}`, { tags: ['B', 'c'], custom_fields: { orders: 2, city: null, plan: 'free' }, name: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: null, email: 'max@example.com', tags: ['b', 'c'], custom_fields: { orders: 2, plan: 'free' } });
    expect(res.body.custom_fields).not.toHaveProperty('city');
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));
    const renumbered = await a.call('PUT', `/api/contacts/${id}`, { contact_no: '+49 (151) 2000 0001' });
    expect(renumbered.body.contact_no).toBe('+4915120000001');
    expect((await a.call('PUT', `/api/contacts/${id}`, { contact_no: '+4915120000001' })).status).toBe(200); // its own number
  });

  it("update to another contact's number: 409; a bad value changes nothing at all", async () => {
    const one = await a.call('POST', '/api/contacts', { contact_no: phone() });
    const two = await a.call('POST', '/api/contacts', { contact_no: phone(), name: 'Two', tags: ['keep'] });
    await refused(a, 'PUT', `/api/contacts/${two.body.id}`, { contact_no: one.body.contact_no }, 409, '/body/contact_no');
    await refused(
      a,
      'PUT',
      `/api/contacts/${two.body.id}`,
      { name: 'Changed', tags: ['new-tag-x'], custom_fields: { plan: 'gold' } },
      422,
      '/body/custom_fields/plan',
    );
    expect((await a.call('GET', `/api/contacts/${two.body.id}`)).body).toMatchObject({ name: 'Two', tags: ['keep'] });
  });

  it("B1 get and update of A's contact with B's key: 404 with the same body as an unknown id; nothing changes", async () => {
    const mine = await a.call('POST', '/api/contacts', { contact_no: phone(), name: 'Private' });
    const unknown = 'ct_00000000000000000000';
    for (const [method, payload] of [
      ['GET', undefined],
      ['PUT', { name: 'Hacked' }],
    ] as const) {
      const theirs = await b.call(method, `/api/contacts/${mine.body.id}`, payload);
      const none = await b.call(method, `/api/contacts/${unknown}`, payload);
      expect(theirs.status).toBe(404);
      expect(none.status).toBe(404);
      expect({ ...theirs.body, detail: theirs.body.detail.replace(mine.body.id, 'X'), instance: 0, request_id: 0 }).toEqual({
        ...none.body,
        detail: none.body.detail.replace(unknown, 'X'),
        instance: 0,
        request_id: 0,
      });
    }
    expect((await a.call('GET', `/api/contacts/${mine.body.id}`)).body.name).toBe('Private');
  });

  it('B8 malformed, long and %00 ids: 400 from the id format, never 500', async () => {
    for (const id of ['abc', 'x'.repeat(500), 'ct_abc%00def']) {
      const res = await a.call('GET', `/api/contacts/${id}`);
      expect([400, 404]).toContain(res.status);
    }
  });
});
