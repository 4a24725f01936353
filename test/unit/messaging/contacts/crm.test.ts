// Tags, custom fields and segments: uniqueness (409 without constraint names), typed fields,
// segment filters checked when saved and counted live, paging and isolation.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { crmCounts, PROBLEM, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  app = await buildShared();
  [a, b] = [await tenant(app), await tenant(app)];
});

async function refused(t: Tenant, url: string, payload: unknown, status: number, pointer?: string) {
  const before = await crmCounts(app);
  const res = await t.call('POST', url, payload);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  if (pointer) expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  expect(await crmCounts(app)).toEqual(before);
  return res.body;
}

describe('tags', () => {
  it('creates, lists by name with live contact counts; names are unique case-insensitively (409)', async () => {
    const vip = await a.call('POST', '/api/tags', { name: 'vip', color: '#E4A11B' });
    expect(vip.status).toBe(201);
    expect(vip.body).toMatchObject({ name: 'vip', color: '#E4A11B', contact_count: 0 });
    const dup = await refused(a, '/api/tags', { name: 'VIP' }, 409);
    expect(dup.type).toBe(`${PROBLEM}conflict`);
    expect(JSON.stringify(dup)).not.toMatch(/tags_workspace|constraint|unique/i);
    await a.call('POST', '/api/tags', { name: 'Alpha' });
    await a.call('POST', '/api/contacts', { contact_no: '+4915130000001', tags: ['VIP', 'new one'] });
    const list = await a.call('GET', '/api/tags');
    expect(list.body.data.map((t: { name: string; contact_count: number }) => [t.name, t.contact_count])).toEqual([
      ['Alpha', 0],
      ['new one', 1],
      ['vip', 1],
    ]);
    expect((await b.call('POST', '/api/tags', { name: 'vip' })).status).toBe(201); // B's own namespace
    expect((await b.call('GET', '/api/tags')).body.data.map((t: { name: string }) => t.name)).toEqual(['vip']);
  });

  it('H6/H8 tag names: over 64 characters, commas, control characters, NUL: 400', async () => {
    await refused(a, '/api/tags', { name: 'x'.repeat(65) }, 400, '/body/name');
    await refused(a, '/api/tags', { name: 'a,b' }, 400, '/body/name');
    await refused(a, '/api/tags', { name: 'a\u0000b' }, 400, '/body/name');
    await refused(a, '/api/tags', { name: 'vip', color: 'red' }, 400, '/body/color');
  });

  it('pages by name with cursors of their own', async () => {
    const first = await a.call('GET', '/api/tags?limit=2');
    expect(first.body.has_more).toBe(true);
    const rest = await a.call('GET', `/api/tags?limit=2&cursor=${first.body.next_cursor}`);
    expect([...first.body.data, ...rest.body.data].map((t: { name: string }) => t.name)).toEqual(['Alpha', 'new one', 'vip']);
    expect((await b.call('GET', `/api/tags?cursor=${first.body.next_cursor}`)).status).toBe(400);
  });
});

describe('custom fields', () => {
  it('creates typed fields, lists them oldest first; keys are unique (409)', async () => {
    const plan = await a.call('POST', '/api/custom-fields', { key: 'plan', label: 'Plan', type: 'choice', choices: ['free', 'pro', 'business'] });
    expect(plan.status).toBe(201);
    expect(plan.body).toMatchObject({ key: 'plan', type: 'choice', choices: ['free', 'pro', 'business'] });
    const city = await a.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    expect(city.body.choices).toBeNull();
    await refused(a, '/api/custom-fields', { key: 'city', label: 'Town', type: 'text' }, 409, '/body/key');
    const list = await a.call('GET', '/api/custom-fields');
    expect(list.body.data.map((f: { key: string }) => f.key)).toEqual(['plan', 'city']);
    expect((await b.call('GET', '/api/custom-fields')).body.data).toEqual([]);
  });

  it('choices: required for choice, refused for other types, unique, not blank (422); key format and type enum (400)', async () => {
    await refused(a, '/api/custom-fields', { key: 'tier', label: 'Tier', type: 'choice' }, 422, '/body/choices');
    await refused(a, '/api/custom-fields', { key: 'age', label: 'Age', type: 'number', choices: ['1'] }, 422, '/body/choices');
    await refused(a, '/api/custom-fields', { key: 'tier', label: 'Tier', type: 'choice', choices: ['a', 'a'] }, 422, '/body/choices');
    await refused(a, '/api/custom-fields', { key: 'tier', label: 'Tier', type: 'choice', choices: ['  '] }, 422, '/body/choices');
    await refused(a, '/api/custom-fields', { key: 'Tier-1', label: 'Tier', type: 'text' }, 400, '/body/key');
    await refused(a, '/api/custom-fields', { key: '__proto__', label: 'P', type: 'text' }, 400, '/body/key');
    const body = await refused(a, '/api/custom-fields', { key: 'tier', label: 'Tier', type: 'boolean' }, 400, '/body/type');
    expect(body.errors[0].detail).toContain('choice');
  });
});

describe('segments', () => {
  it('saves a filter and counts its contacts live; names are unique (409)', async () => {
    await a.call('POST', '/api/custom-fields', { key: 'orders', label: 'Orders', type: 'number' });
    await a.call('POST', '/api/custom-fields', { key: 'since', label: 'Since', type: 'date' });
    const filter = {
      match: 'all',
      conditions: [
        { field: 'custom_fields.orders', operator: 'gte', value: 2 },
        { field: 'tag', operator: 'neq', value: 'blocked' },
      ],
    };
    const seg = await a.call('POST', '/api/segments', { name: 'Repeat buyers', description: 'Two orders or more', filter });
    expect(seg.status).toBe(201);
    expect(seg.body).toMatchObject({ name: 'Repeat buyers', description: 'Two orders or more', filter, contact_count: 0 });
    await a.call('POST', '/api/contacts', { contact_no: '+4915140000001', custom_fields: { orders: 2 } });
    await a.call('POST', '/api/contacts', { contact_no: '+4915140000002', custom_fields: { orders: 5 }, tags: ['blocked'] });
    await a.call('POST', '/api/contacts', { contact_no: '+4915140000003', custom_fields: { orders: 1 } });
    const list = await a.call('GET', '/api/segments');
    expect(list.body.data.find((s: { id: string }) => s.id === seg.body.id).contact_count).toBe(1);
    await refused(a, '/api/segments', { name: 'repeat BUYERS', filter }, 409, '/body/name');
    expect((await b.call('GET', '/api/segments')).body.data).toEqual([]);
  });

  it('tag conditions: the name in any case; a tag that does not exist is on no contact', async () => {
    const c = await tenant(app);
    await c.call('POST', '/api/contacts', { contact_no: '+4915140000021', tags: ['Gold'] });
    await c.call('POST', '/api/contacts', { contact_no: '+4915140000022', tags: ['silver'] });
    await c.call('POST', '/api/contacts', { contact_no: '+4915140000023' });
    const segment = async (operator: string, value: string) => {
      const res = await c.call('POST', '/api/segments', {
        name: `t${Math.random()}`,
        filter: { match: 'all', conditions: [{ field: 'tag', operator, value }] },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const members = await c.call('GET', `/api/contacts?segment_id=${res.body.id}`);
      expect(members.body.data).toHaveLength(res.body.contact_count);
      return {
        id: res.body.id as string,
        count: res.body.contact_count as number,
        phones: members.body.data.map((m: { contact_no: string }) => m.contact_no).sort(),
      };
    };
    expect(await segment('eq', 'GOLD')).toMatchObject({ count: 1, phones: ['+4915140000021'] });
    expect(await segment('neq', 'gold')).toMatchObject({ count: 2, phones: ['+4915140000022', '+4915140000023'] });
    const later = await segment('eq', 'bronze');
    expect(later).toMatchObject({ count: 0, phones: [] });
    expect(await segment('neq', 'bronze')).toMatchObject({ count: 3 });
    // The tag made after the segment was saved counts from then on.
    const tagged = await c.call('POST', '/api/contacts', { contact_no: '+4915140000024', tags: ['Bronze'] });
    expect(tagged.status).toBe(201);
    expect((await c.call('GET', `/api/contacts?segment_id=${later.id}`)).body.data.map((m: { contact_no: string }) => m.contact_no)).toContain(
      '+4915140000024',
    );
  });

  it('any-of filters, dates, within_days and exists', async () => {
    await a.call('POST', '/api/contacts', { contact_no: '+4915140000011', name: 'Dated', custom_fields: { since: '2026-01-15' } });
    const count = async (conditions: object[], match = 'all') => {
      const res = await a.call('POST', '/api/segments', { name: `s${Math.random()}`, filter: { match, conditions } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.contact_count as number;
    };
    expect(await count([{ field: 'custom_fields.since', operator: 'gt', value: '2026-01-14' }])).toBe(1);
    expect(await count([{ field: 'custom_fields.since', operator: 'lt', value: '2026-01-15' }])).toBe(0);
    expect(
      await count(
        [
          { field: 'custom_fields.since', operator: 'exists' },
          { field: 'name', operator: 'contains', value: 'date' },
        ],
        'all',
      ),
    ).toBe(1);
    expect(
      await count(
        [
          { field: 'name', operator: 'eq', value: 'DATED' },
          { field: 'custom_fields.orders', operator: 'eq', value: 5 },
        ],
        'any',
      ),
    ).toBe(2);
    expect(await count([{ field: 'created_at', operator: 'within_days', value: 1 }])).toBeGreaterThanOrEqual(5);
    expect(await count([{ field: 'last_inbound_at', operator: 'within_days', value: 1 }])).toBe(0);
    expect(await count([{ field: 'name', operator: 'contains', value: '%' }])).toBe(0);
  });

  it('422 naming the condition: unknown custom field, operator not for the type, value of the wrong type', async () => {
    const bad: [object, string][] = [
      [{ field: 'custom_fields.tier', operator: 'eq', value: 'gold' }, '/body/filter/conditions/0/field'],
      [{ field: 'name', operator: 'gt', value: 'x' }, '/body/filter/conditions/0/operator'],
      [{ field: 'custom_fields.orders', operator: 'gt', value: 'many' }, '/body/filter/conditions/0/value'],
      [{ field: 'created_at', operator: 'lt', value: '2026-02-30' }, '/body/filter/conditions/0/value'],
      [{ field: 'custom_fields.plan', operator: 'eq', value: 'gold' }, '/body/filter/conditions/0/value'],
      [{ field: 'tag', operator: 'exists', value: 'x' }, '/body/filter/conditions/0/value'],
      [{ field: 'email', operator: 'eq' }, '/body/filter/conditions/0/value'],
      [{ field: 'last_inbound_at', operator: 'within_days', value: 1.5 }, '/body/filter/conditions/0/value'],
    ];
    for (const [condition, pointer] of bad) {
      const body = await refused(a, '/api/segments', { name: 'Bad', filter: { match: 'all', conditions: [condition] } }, 422, pointer);
      expect(body.type).toBe(`${PROBLEM}unprocessable`);
    }
  });

  it("400 for the filter's shape: field off the pattern, operator off the list, no conditions, unknown keys", async () => {
    await refused(
      a,
      '/api/segments',
      { name: 'x', filter: { match: 'all', conditions: [{ field: 'password_hash', operator: 'eq', value: 'x' }] } },
      400,
      '/body/filter/conditions/0/field',
    );
    await refused(
      a,
      '/api/segments',
      { name: 'x', filter: { match: 'all', conditions: [{ field: 'name', operator: 'like', value: 'x' }] } },
      400,
      '/body/filter/conditions/0/operator',
    );
    await refused(a, '/api/segments', { name: 'x', filter: { match: 'all', conditions: [] } }, 400, '/body/filter/conditions');
    await refused(a, '/api/segments', { name: 'x', filter: { match: 'all', conditions: [{ field: 'name', operator: 'exists', sql: '1=1' }] } }, 400);
  });
});
