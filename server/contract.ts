// The generated contract as the server reads it: the one module of server/ that reads
// generated/. Each document is read and parsed once per process and shared by every app built
// in it (tests build many), and every question the server asks of the contract is answered
// here: the operations with their routes, security and request schemas, the published texts,
// and the component schemas some areas validate against. Parsed documents are shared, so no
// caller may change one: copy what you need to change.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { FastifySchema } from 'fastify';
import { parse } from 'yaml';

export const API_NAMES = ['account', 'connect', 'login', 'messaging'] as const;
export type ApiName = (typeof API_NAMES)[number];
export type DocumentVersion = '3.0' | '3.1';

/** One entry of an operation's `security`: scheme name → required scopes. */
export type SecurityRequirement = Record<string, string[]>;

const generated = new URL('../generated/', import.meta.url);

export function documentPath(api: ApiName, version: DocumentVersion): URL {
  return new URL(`${api}/openapi.${version}.yaml`, generated);
}

const texts = new Map<string, string>();
const documents = new Map<string, any>();

/** The document's YAML as published (`/openapi/<api>.<version>.yaml`). */
export function documentText(api: ApiName, version: DocumentVersion): string {
  const key = `${api}/${version}`;
  let text = texts.get(key);
  if (text === undefined) texts.set(key, (text = readFileSync(documentPath(api, version), 'utf8')));
  return text;
}

/** The parsed document; shared, so never changed by its readers. */
export function contractDocument(api: ApiName, version: DocumentVersion = '3.1'): any {
  const key = `${api}/${version}`;
  let doc = documents.get(key);
  if (doc === undefined) documents.set(key, (doc = parseCached(documentText(api, version))));
  return doc;
}

// Parsing the YAML takes seconds (the Messaging document alone about 1.5 s), JSON a few tens of
// milliseconds: each process start and test worker reads a JSON copy kept under node_modules,
// named by the YAML's digest, so a changed document is parsed again. Best effort: a cache that
// cannot be written (a read-only install) only costs the parse.
const cache = new URL('../node_modules/.cache/chatapp-contract/', generated);

function parseCached(text: string): unknown {
  const file = new URL(`${createHash('sha256').update(text).digest('hex')}.json`, cache);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    const doc = parse(text);
    try {
      mkdirSync(cache, { recursive: true });
      const partial = new URL(`${file.pathname.split('/').pop()}.${process.pid}.tmp`, cache);
      writeFileSync(partial, JSON.stringify(doc));
      renameSync(partial, file);
    } catch {
      // not cached: parsed again next time
    }
    return doc;
  }
}

/** `components/schemas` of an API's 3.1 document (JSON Schema 2020-12, `$ref`s unresolved). */
export function componentSchemas(api: ApiName): Record<string, unknown> {
  return contractDocument(api).components?.schemas ?? {};
}

/** One operation of the contract, as the server mounts it. */
export interface Operation {
  api: ApiName;
  operationId: string;
  method: string;
  /** The document's path template (`/api/contacts/{id}`). */
  path: string;
  /** The same path as Fastify's router writes it (`/api/contacts/:id`). */
  url: string;
  /** The operation's own `security`, else the document's: one requirement of the list must hold. */
  security: SecurityRequirement[];
  /** True when no requirement is empty: the operation never runs without a credential. */
  secured: boolean;
  /** Media types of the request body, in lower case; empty when the operation takes none. */
  bodyTypes: string[];
  bodyRequired: boolean;
  /** Fastify's route schema: params, querystring, headers, body by media type, responses. */
  schema: FastifySchema;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const operationsByApi = new Map<ApiName, Operation[]>();

/** Every operation of `api` in document order (of every API without one), built once per process. */
export function contractOperations(api?: ApiName): Operation[] {
  if (!api) return API_NAMES.flatMap((name) => contractOperations(name));
  let list = operationsByApi.get(api);
  if (!list) operationsByApi.set(api, (list = buildOperations(api)));
  return list;
}

function buildOperations(api: ApiName): Operation[] {
  const doc = contractDocument(api);
  const resolved = resolveRefs(doc);
  const list: Operation[] = [];
  for (const [path, item] of Object.entries<any>(resolved.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!METHODS.has(method) || !op?.operationId) continue;
      const security: SecurityRequirement[] = op.security ?? resolved.security ?? [];
      const content: Record<string, unknown> = op.requestBody?.content ?? {};
      list.push({
        api,
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        url: path.replace(/{(\w+)}/g, ':$1'),
        security,
        secured: security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0),
        bodyTypes: Object.keys(content).map((type) => type.toLowerCase()),
        bodyRequired: op.requestBody?.required === true,
        schema: routeSchema(op, [...(item.parameters ?? []), ...(op.parameters ?? [])]),
      });
    }
  }
  return list;
}

/**
 * The document as fastify-openapi-glue reads it to mount `operations` (server/apis/area.ts): the
 * parsed document's version, title and paths, each operation with its operationId only. Glue
 * validates, clones and dereferences whatever it is given on every app build, and the mounted
 * routes take their schemas from `Operation.schema`, so the whole document would cost hundreds
 * of milliseconds a build for nothing; this form costs about a millisecond.
 */
export function routingDocument(api: ApiName, operations: readonly Operation[]): object {
  const { openapi, info } = contractDocument(api);
  const paths: Record<string, Record<string, { operationId: string }>> = {};
  for (const operation of operations) {
    if (operation.api !== api) throw new Error(`${operation.api}:${operation.operationId} is not an operation of ${api}`);
    paths[operation.path] = { ...paths[operation.path], [operation.method.toLowerCase()]: { operationId: operation.operationId } };
  }
  return { openapi, info: { title: info.title, version: info.version }, paths };
}

// Route schemas, as fastify-openapi-glue builds them: parameters grouped by where they are, one
// exploded object as the whole query, bodies and responses by media type.
type Parameter = {
  name: string;
  in: string;
  schema?: object;
  description?: string;
  required?: boolean;
  style?: string;
  explode?: boolean;
  content?: Record<string, { schema?: object }>;
};

function routeSchema(op: any, parameters: Parameter[]): FastifySchema {
  const schema: Record<string, unknown> = { operationId: op.operationId, ...(op.tags && { tags: op.tags }), ...(op.summary && { summary: op.summary }) };
  const where = (place: string) => parameters.filter((p) => p.in === place);
  if (where('path').length) schema.params = acyclic(parameterObject(where('path')));
  const query = where('query');
  if (query.length) schema.querystring = acyclic(queryObject(query));
  // Node gives header names in lower case, and Fastify lowercases a header schema's names only
  // for its own compiler, not ours (lib/validation.ts): named as they arrive, or never checked.
  const headers = where('header').map((p) => ({ ...p, name: p.name.toLowerCase() }));
  if (headers.length) schema.headers = acyclic(parameterObject(headers));
  const body = byMediaType(op.requestBody?.content);
  if (body) schema.body = { content: body };
  const response: Record<string, unknown> = {};
  for (const [code, answer] of Object.entries<any>(op.responses ?? {})) {
    const content = byMediaType(answer?.content);
    if (content) response[code] = { content };
  }
  if (Object.keys(response).length) schema.response = response;
  return schema as FastifySchema;
}

function parameterObject(list: Parameter[]): object {
  const properties: Record<string, object> = {};
  const required: string[] = [];
  for (const { name, schema, description, required: isRequired } of list) {
    properties[name] = { ...schema, ...(description && { description }) };
    if (isRequired) required.push(name);
  }
  return { type: 'object', properties, ...(required.length && { required }) };
}

function queryObject(list: Parameter[]): object {
  const [only] = list;
  if (list.length === 1 && only) {
    if (only.content) return Object.values(only.content)[0]?.schema ?? {};
    const explode = only.explode ?? (only.style ?? 'form') === 'form';
    if (explode && (only.schema as { type?: string } | undefined)?.type === 'object') return only.schema!;
  }
  return parameterObject(list);
}

function byMediaType(content: Record<string, { schema?: object }> | undefined): Record<string, object> | undefined {
  if (!content || !Object.keys(content).length) return undefined;
  const out: Record<string, object> = {};
  for (const [type, media] of Object.entries(content)) out[type] = media.schema ? { schema: acyclic(media.schema) } : {};
  return out;
}

/** The document with every local `$ref` replaced by its target (shared objects, possibly cyclic). */
function resolveRefs(doc: any): any {
  const copy = structuredClone(doc);
  const target = (ref: string): unknown => {
    if (!ref.startsWith('#/')) throw new Error(`the contract refers outside its document: ${ref}`);
    let node: any = copy;
    for (const token of ref.slice(2).split('/')) node = node?.[token.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`the contract refers to nothing: ${ref}`);
    return node;
  };
  const seen = new Set<object>();
  const walk = (node: any): any => {
    if (typeof node !== 'object' || node === null) return node;
    if (typeof node.$ref === 'string') {
      const { $ref, ...siblings } = node;
      const resolved = walk(target($ref));
      // 3.1 allows keywords beside `$ref` (a `default`, a `description`): they apply on top.
      return Object.keys(siblings).length ? { ...resolved, ...siblings } : resolved;
    }
    if (seen.has(node)) return node;
    seen.add(node);
    for (const [key, value] of Object.entries(node)) node[key] = walk(value);
    return node;
  };
  return walk(copy);
}

/**
 * A copy of a resolved schema that JSON can hold: a recursive part becomes a `$ref` to the
 * pointer of its first occurrence, with an `$id` for Ajv to resolve it against.
 */
let recursiveSchemas = 0;
function acyclic(schema: object): object {
  let refAdded = false;
  const copy = (node: unknown, pointer: string, ancestors: Map<object, string>): unknown => {
    if (typeof node !== 'object' || node === null) return node;
    const cycle = ancestors.get(node);
    if (cycle !== undefined) {
      refAdded = true;
      return { $ref: cycle };
    }
    const inner = new Map(ancestors).set(node, pointer);
    if (Array.isArray(node)) return node.map((value, i) => copy(value, `${pointer}/${i}`, inner));
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) out[key] = copy(value, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, inner);
    return out;
  };
  const out = copy(schema, '#', new Map()) as Record<string, unknown>;
  if (refAdded && out.$id === undefined) out.$id = `urn:chatapp:recursive-schema:${++recursiveSchemas}`;
  return out;
}
