// Response schemas as fast-json-stringify reads them (server/lib/openapi-maps.ts): maps written
// as `unevaluatedProperties` are serialized with their entries, and nullable scalars become one
// `type` list the serializer settles without Ajv, writing the same JSON as before.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { describe, expect, it } from 'vitest';
import { contractOperations } from '#server/contract.js';
import { mapsForSerializer } from '#server/lib/openapi-maps.js';

const serializer = (schema: object) =>
  SerializerSelector()({}, { ajv: { strict: false } })({
    schema: mapsForSerializer(structuredClone(schema)),
    method: 'GET',
    url: '/',
    httpStatus: '200',
  } as never);

describe('response schemas for the serializer', () => {
  it('turns nullable scalars into a type list, keeping a string format and an enum', () => {
    const schema = mapsForSerializer({
      type: 'object',
      properties: {
        name: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'd' },
        at: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
        value: { anyOf: [{ type: 'string', maxLength: 9 }, { type: 'number', format: 'double' }, { type: 'null' }] },
        source: { anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }] },
        either: { anyOf: [{ type: 'object', properties: {} }, { type: 'null' }] },
      },
    }) as { properties: Record<string, object> };
    expect(schema.properties.name).toEqual({ type: ['string', 'null'], description: 'd' });
    expect(schema.properties.at).toEqual({ type: ['string', 'null'], format: 'date-time' });
    expect(schema.properties.value).toEqual({ type: ['string', 'number', 'null'] });
    expect(schema.properties.source).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
    // An object branch stays a union.
    expect(schema.properties.either).toHaveProperty('anyOf');
  });

  it('writes a page of contacts as JSON.stringify does, nulls, dates, maps and all', () => {
    const list = contractOperations('messaging').find((operation) => operation.operationId === 'listContacts')!;
    const schema = (list.schema.response as Record<string, { content: Record<string, { schema: object }> }>)['200']!.content['application/json']!.schema;
    const contact = (i: number, filled: boolean) => ({
      id: `ct_0000000${i}abcdefgh`,
      contact_no: `+1415555010${i}`,
      name: filled ? `Name ${i}` : null,
      email: filled ? `a${i}@example.com` : null,
      tags: filled ? ['vip', 'new'] : [],
      custom_fields: filled ? { plan: 'gold', seats: 3, cleared: null } : {},
      last_inbound_at: filled ? '2026-01-02T03:04:05.000Z' : null,
      window_expires_at: filled ? '2026-01-03T03:04:05.000Z' : null,
      opted_out: !filled,
      opted_out_at: filled ? null : '2026-01-02T03:04:05.000Z',
      opt_out_source: filled ? null : 'keyword',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    });
    const page = { data: [contact(1, true), contact(2, false)], has_more: true, next_cursor: 'abc.def' };
    expect(JSON.parse(serializer(schema)(page))).toEqual(page);
  });
});
