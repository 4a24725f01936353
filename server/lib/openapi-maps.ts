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

/** Mutates `doc` in place; answers it. Only for serializing: Ajv validates the original. */
export function mapsForSerializer<T>(doc: T): T {
  const seen = new Set<unknown>();
  const walk = (node: unknown): void => {
    if (!isObject(node) && !Array.isArray(node)) return;
    if (seen.has(node)) return;
    seen.add(node);
    if (isObject(node)) {
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

/** Fastify's own serializer factory, given response schemas with maps made readable (a copy each). */
export const mapSerializer: BuildSerializer = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  const shared = JSON.stringify([externalSchemas ?? {}, options ?? {}]);
  return (route) => {
    const key = `${shared} ${JSON.stringify(route.schema)}`;
    let serialize = built.get(key);
    if (!serialize) built.set(key, (serialize = build({ ...route, schema: mapsForSerializer(structuredClone(route.schema)) })));
    return serialize;
  };
};
