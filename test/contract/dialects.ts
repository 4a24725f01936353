// Response validators for one generated document in each OpenAPI dialect, built from
// independent libraries rather than the server's own contract code: the 3.0 document's schemas
// converted to JSON Schema by @openapi-contrib/openapi-schema-to-json-schema (`nullable` as the
// 3.0.3 text defines it: it adds null to the type the schema states, nothing else) and checked by
// Ajv draft-07; the 3.1 document's schemas as they are, checked by Ajv 2020-12.
import { readFileSync } from 'node:fs';
import { openapiSchemaToJsonSchema } from '@openapi-contrib/openapi-schema-to-json-schema';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

export type Dialect = '3.0' | '3.1';

/** validate(operationId, status, contentType, body) → the errors, none when the body conforms. */
export type ResponseValidator = (operationId: string, status: number, contentType: string, body: unknown) => string[];

const DOC_ID = 'openapi.json';

export function responseValidator(api: string, dialect: Dialect): ResponseValidator {
  const doc = parse(readFileSync(new URL(`../../generated/${api}/openapi.${dialect}.yaml`, import.meta.url), 'utf8'));
  const ajv =
    dialect === '3.0'
      ? new Ajv.default({ strict: false, allErrors: true, logger: false })
      : new Ajv2020.default({ strict: false, allErrors: true, logger: false });
  addFormats.default(ajv);
  // OpenAPI's own formats (int32 and int64 become bounds in the 3.0 conversion).
  for (const format of ['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']) ajv.addFormat(format, true);
  const convert = (schema: unknown) => (dialect === '3.0' ? to07(schema) : schema);
  const schemas = Object.fromEntries(Object.entries<unknown>(doc.components?.schemas ?? {}).map(([name, s]) => [name, rebase(convert(s))]));
  ajv.addSchema({ $id: DOC_ID, components: { schemas } });

  const operations = new Map<string, Record<string, { content?: Record<string, { schema?: unknown }> }>>();
  for (const item of Object.values<Record<string, { operationId?: string; responses?: never }>>(doc.paths ?? {})) {
    for (const op of Object.values(item)) if (op?.operationId) operations.set(op.operationId, op.responses ?? {});
  }
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  return (operationId, status, contentType, body) => {
    const responses = operations.get(operationId);
    if (!responses) return [`${operationId} is not in the ${api} ${dialect} document`];
    const declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
    if (!declared) return [`status ${status} is not declared for ${operationId}`];
    const schema = declared.content?.[contentType]?.schema;
    if (!schema) return declared.content ? [`${contentType} is not declared for ${operationId} ${status}`] : [];
    const key = `${operationId} ${status} ${contentType}`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(rebase(convert(schema)) as object);
      compiled.set(key, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  };
}

/** A 3.0 Schema Object as draft-07 JSON Schema (the converter writes draft-04's `$schema`). */
function to07(schema: unknown): unknown {
  const { $schema: _, ...converted } = openapiSchemaToJsonSchema(schema as object, { definitionKeywords: [] }) as Record<string, unknown>;
  return converted;
}

/** `#/components/...` inside a standalone schema must point into the registered document. */
function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase);
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${DOC_ID}${v}` : rebase(v)]),
  );
}
