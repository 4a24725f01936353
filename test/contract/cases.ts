// Contract cases read from a generated 3.1 document: one case per operation and example name.
// TypeSpec's @opExample spreads one example over parameters, request body and response under
// the same name, so a name ties a request to the response it illustrates.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { MULTIPART_PATHS } from './multipart.js';

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: unknown;
  examples?: Record<string, { value: unknown }>;
}

export interface Operation {
  operationId: string;
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> };
  responses: Record<
    string,
    { content?: Record<string, { examples?: Record<string, { value: unknown } | { $ref: string }> }>; headers?: Record<string, unknown> }
  >;
  security?: Record<string, string[]>[];
}

export interface ContractCase {
  api: string;
  operationId: string;
  method: string;
  path: string;
  example: string;
  /** The status the example illustrates; undefined for a success without a body (any 2xx/3xx). */
  status?: number;
  /** The example response body, when the example has one. */
  responseExample?: unknown;
  responseType?: string;
  params: Parameter[];
  paramValues: Record<string, unknown>;
  contentType?: string;
  body?: unknown;
  security: Record<string, string[]>[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export function loadDocument(api: string): any {
  return parse(readFileSync(new URL(`../../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8'));
}

export function loadCases(api: string): ContractCase[] {
  const doc = loadDocument(api);
  const cases: ContractCase[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op: Operation | undefined = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => ('$ref' in p ? resolve(doc, p.$ref) : p)) as Parameter[];
      // An example's name ties its parts together; parameters shared through components carry
      // every operation's examples, so names come only from what is the operation's own.
      const names = new Set<string>();
      const own = [...(item.parameters ?? []), ...(op.parameters ?? [])].filter((p: object) => !('$ref' in p)) as Parameter[];
      for (const p of own) Object.keys(p.examples ?? {}).forEach((n) => names.add(n));
      const bodies = Object.entries(op.requestBody?.content ?? {});
      for (const [, m] of bodies) Object.keys(m.examples ?? {}).forEach((n) => names.add(n));
      // A shared problem example (a `$ref` to components.examples, scripts/lib/problem-examples.mjs)
      // illustrates a status, not a request: test/unit/mocks/mock-examples.test.ts serves those.
      for (const res of Object.values(op.responses)) {
        for (const m of Object.values(res.content ?? {})) {
          for (const [n, e] of Object.entries(m.examples ?? {})) if (!('$ref' in e)) names.add(n);
        }
      }
      for (const example of names) {
        let status: number | undefined;
        let responseExample: unknown;
        let responseType: string | undefined;
        for (const [code, res] of Object.entries(op.responses)) {
          for (const [type, m] of Object.entries(res.content ?? {})) {
            const found = m.examples?.[example];
            if (found && 'value' in found) {
              status = Number(code);
              responseExample = found.value;
              responseType = type;
            }
          }
        }
        const paramValues: Record<string, unknown> = {};
        for (const p of params) if (p.examples?.[example]) paramValues[`${p.in}:${p.name}`] = p.examples[example].value;
        for (const [name, value] of Object.entries(MULTIPART_PATHS[op.operationId]?.[example] ?? {})) paramValues[`path:${name}`] ??= value;
        cases.push({
          api,
          operationId: op.operationId,
          method: method.toUpperCase(),
          path,
          example,
          status,
          responseExample,
          responseType,
          params,
          paramValues,
          ...requestBodyFor(bodies, example),
          security: op.security ?? doc.security ?? [],
        });
      }
    }
  }
  return cases;
}

/** The body of one example: the content type that has it, else the first one declared. */
function requestBodyFor(bodies: [string, { examples?: Record<string, { value: unknown }> }][], example: string) {
  const withExample = bodies.find(([, m]) => m.examples?.[example]);
  if (withExample) return { contentType: withExample[0], body: withExample[1].examples![example].value };
  // TypeSpec cannot attach examples to multipart bodies: an example without a body on an
  // operation that takes multipart is a multipart request (built by multipart.ts).
  if (bodies.some(([type]) => type === 'multipart/form-data')) return { contentType: 'multipart/form-data', body: undefined };
  return { contentType: bodies[0]?.[0], body: undefined };
}

/** Every operationId of a document (to check each has at least one case). */
export function allOperationIds(api: string): string[] {
  const doc = loadDocument(api);
  return Object.values<any>(doc.paths ?? {}).flatMap((item) => METHODS.flatMap((m) => (item[m] ? [item[m].operationId] : [])));
}

function resolve(doc: any, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}
