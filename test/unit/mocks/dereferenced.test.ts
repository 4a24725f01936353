// The published dereferenced documents (generated/<api>/openapi.3.1.dereferenced.json): free of
// `$ref` except where a schema contains itself, the same operations and webhooks as the 3.1
// document, up to date with it, and served at /openapi/<api>.3.1.dereferenced.(json|yaml).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dereference, remainingRefs } from '../../../scripts/lib/dereference.mjs';
import { buildShared } from '#test/helper.js';

const APIS = ['account', 'connect', 'login', 'messaging'] as const;
const read = (api: string, file: string) => readFileSync(new URL(`../../../generated/${api}/${file}`, import.meta.url), 'utf8');
const operations = (doc: any) =>
  Object.entries<any>(doc.paths ?? {})
    .flatMap(([path, item]) =>
      Object.entries<any>(item)
        .filter(([, op]) => op?.operationId)
        .map(([m, op]) => `${m} ${path} ${op.operationId}`),
    )
    .sort();

describe.each(APIS)('%s dereferenced document', (api) => {
  const source = parse(read(api, 'openapi.3.1.yaml'));
  const published = JSON.parse(read(api, 'openapi.3.1.dereferenced.json'));

  it('has no $ref left but those of recursive schemas', () => {
    const { recursive } = dereference(source);
    expect([...remainingRefs(published)].sort()).toEqual(recursive);
  });

  it('has the same operations, webhooks and components as the 3.1 document', () => {
    expect(operations(published)).toEqual(operations(source));
    expect(Object.keys(published.webhooks ?? {})).toEqual(Object.keys(source.webhooks ?? {}));
    expect(Object.keys(published.components.schemas)).toEqual(Object.keys(source.components.schemas));
    expect(published.openapi).toBe(source.openapi);
  });

  it('is up to date with the 3.1 document (npm run generate writes both)', () => {
    // Enum constant names are for generators reading the 3.1 document; the dereferenced copy
    // leaves them out (scripts/generate.mjs, withoutEnumNames).
    const named = structuredClone(source);
    for (const schema of Object.values<any>(named.components?.schemas ?? {})) delete schema['x-enum-varnames'];
    expect(published).toEqual(JSON.parse(JSON.stringify(dereference(named).doc)));
  });
});

describe('dereference', () => {
  it('inlines references, escaped pointers included, and applies keywords beside $ref on top', () => {
    const doc = {
      paths: { '/a': { get: { responses: { '200': { $ref: '#/components/responses/Ok' } } } } },
      components: {
        responses: { Ok: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet', description: 'the pet' } } } } },
        schemas: { Pet: { type: 'object', properties: { tag: { $ref: '#/components/schemas/a~1b' } } }, 'a/b': { type: 'string' } },
      },
    };
    const { doc: out, recursive } = dereference(doc);
    expect(recursive).toEqual([]);
    expect(remainingRefs(out).size).toBe(0);
    expect(out.paths['/a'].get.responses['200'].content['application/json'].schema).toEqual({
      type: 'object',
      description: 'the pet',
      properties: { tag: { type: 'string' } },
    });
    expect(doc.paths['/a'].get.responses['200']).toEqual({ $ref: '#/components/responses/Ok' });
  });

  it('leaves a recursive reference in place, still resolvable in the kept components', () => {
    const doc = {
      paths: {
        '/tree': { get: { responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } } } } },
      },
      components: { schemas: { Node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } } } } },
    };
    const { doc: out, recursive } = dereference(doc);
    expect(recursive).toEqual(['#/components/schemas/Node']);
    const schema = out.paths['/tree'].get.responses['200'].content['application/json'].schema;
    expect(schema.type).toBe('object');
    expect(schema.properties.children.items).toEqual({ $ref: '#/components/schemas/Node' });
    expect(out.components.schemas.Node).toBeDefined();
    expect(() => JSON.stringify(out)).not.toThrow();
  });

  it('refuses a dangling or remote reference rather than publish it', () => {
    expect(() => dereference({ a: { $ref: '#/components/schemas/Missing' } })).toThrow(/dangling reference/);
    expect(() => dereference({ a: { $ref: 'https://example.com/x.yaml' } })).toThrow(/only local references/);
  });
});

describe('served', async () => {
  const app = await buildShared();

  it.each(['json', 'yaml'])('/openapi/login.3.1.dereferenced.%s is the published file', async (ext) => {
    const res = await app.inject({ method: 'GET', url: `/openapi/login.3.1.dereferenced.${ext}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(`application/${ext};charset=utf-8`.replace(';', '; '));
    expect(res.body).toBe(read('login', 'openapi.3.1.dereferenced.json'));
    // JSON is YAML 1.2: a YAML reader gets the same document.
    if (ext === 'yaml') expect(parse(res.body).info).toEqual(JSON.parse(res.body).info);
  });
});
