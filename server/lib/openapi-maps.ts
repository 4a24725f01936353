// Response schemas as fast-json-stringify reads them best (a copy each; Ajv validates the original).
//
// TypeSpec's 3.1 emitter writes a map (`Record<T>`, or a model spreading one) as
// `unevaluatedProperties: T`. Request validation (Ajv 2020) reads that right, but Fastify's
// response serializer (fast-json-stringify) does not know the keyword and would send such a map
// as `{}`. Where the two keywords mean the same thing (no allOf/anyOf/oneOf for
// `unevaluatedProperties` to see through), the serializer's copy of the schema also gets
// `additionalProperties: T`, which it understands. A closed object (`unevaluatedProperties: { not: {} }`) is left alone: the
// serializer already writes only declared properties.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isClosed = (v: unknown) => isObject(v) && Object.keys(v).length === 1 && isObject(v.not) && Object.keys(v.not).length === 0;

// A nullable scalar (`anyOf: [{ type: string }, { type: null }]`, how the 3.1 emitter writes
// `string | null`) is, for fast-json-stringify, a union it settles on each value by running Ajv
// over every branch: a page of 20 contacts ran about a hundred validations, and made the
// serializer slower than JSON.stringify. When every branch is a bare scalar type (at most one
// with a `format`), the serializer's copy says the same as one `type` list, which it settles by
// `typeof`, with the same output.
const SCALARS = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const SCALAR_KEYWORDS = new Set([
  'type',
  'format',
  'enum',
  'description',
  'examples',
  'pattern',
  'maxLength',
  'minLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'title',
]);

function scalarUnion(branches: unknown): { type: string[]; format?: unknown; enum?: unknown[] } | undefined {
  if (!Array.isArray(branches) || branches.length < 2) return undefined;
  const type: string[] = [];
  let format: unknown;
  let values: unknown[] | undefined;
  for (const branch of branches) {
    if (!isObject(branch) || typeof branch.type !== 'string' || !SCALARS.has(branch.type) || type.includes(branch.type)) return undefined;
    if (Object.keys(branch).some((keyword) => !SCALAR_KEYWORDS.has(keyword))) return undefined;
    // Only a string's format changes what is written (a Date as date-time); a number's does not.
    if (branch.format !== undefined && branch.type === 'string') {
      if (format !== undefined) return undefined;
      format = branch.format;
    }
    if (Array.isArray(branch.enum)) {
      if (values) return undefined;
      values = branch.enum;
    }
    type.push(branch.type);
  }
  if (values && type.length !== 2) return undefined;
  return { type, ...(format !== undefined && { format }), ...(values && { enum: type.includes('null') ? [...values, null] : values }) };
}

/** Mutates `doc` in place; answers it. Only for serializing: Ajv validates the original. */
export function mapsForSerializer<T>(doc: T): T {
  const seen = new Set<unknown>();
  const walk = (node: unknown): void => {
    if (!isObject(node) && !Array.isArray(node)) return;
    if (seen.has(node)) return;
    seen.add(node);
    if (isObject(node)) {
      const union = node.type === undefined && !node.allOf && !node.oneOf ? scalarUnion(node.anyOf) : undefined;
      if (union) {
        delete node.anyOf;
        Object.assign(node, union);
      }
      const u = node.unevaluatedProperties;
      if (u !== undefined && u !== false && !isClosed(u) && node.additionalProperties === undefined && !node.allOf && !node.anyOf && !node.oneOf) {
        node.additionalProperties = u;
      }
      for (const v of Object.values(node)) walk(v);
    } else for (const v of node) walk(v);
  };
  walk(doc);
  return doc;
}

type BuildSerializer = ReturnType<typeof SerializerSelector>;

type Serialize = ReturnType<ReturnType<BuildSerializer>>;

// Built once per process for each distinct response schema and set of shared schemas, so that
// every app built from the same documents (tests build many) reuses the serializers. The set is
// bounded by the contract.
const built = new Map<string, Serialize>();
// The contract's route schemas are the same objects in every build (server/contract.ts parses
// once): found by identity first, a build costs no JSON text of ~1,800 response schemas (about
// 35 ms an app).
const byIdentity = new Map<string, WeakMap<object, Serialize>>();

/** Fastify's own serializer factory, given response schemas with maps made readable (a copy each). */
export const mapSerializer: BuildSerializer = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  const shared = JSON.stringify([externalSchemas ?? {}, options ?? {}]);
  let known = byIdentity.get(shared);
  if (!known) byIdentity.set(shared, (known = new WeakMap()));
  return (route) => {
    const schema = route.schema as object;
    let serialize = known.get(schema);
    if (serialize) return serialize;
    const key = `${shared} ${JSON.stringify(schema)}`;
    serialize = built.get(key);
    if (!serialize) built.set(key, (serialize = build({ ...route, schema: mapsForSerializer(structuredClone(route.schema)) })));
    known.set(schema, serialize);
    return serialize;
  };
};
