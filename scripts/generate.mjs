#!/usr/bin/env node
// `npm run generate`: compiles spec/main.tsp and writes, for each API,
//   generated/<api>/openapi.3.0.yaml, openapi.3.1.yaml (with `webhooks:`), types.ts and
//   openapi.3.1.dereferenced.json (the 3.1 document with its references inlined, for tools that
//   cannot follow them; JSON, pretty-printed so a change diffs by line).
// TypeSpec has no webhook output, so each API's events are a second @service whose paths
// (one per event type) become the 3.1 document's `webhooks:` and whose schemas are merged in.
// Error responses the spec gives no example get a shared one (scripts/lib/problem-examples.mjs).
// `--check` writes nothing and exits 1 when generated/ differs from what it would write.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import openapiTS, { astToString } from 'openapi-typescript';
import { APIS } from './lib/apis.mjs';
import { dereference } from './lib/dereference.mjs';
import { addProblemExamples } from './lib/problem-examples.mjs';
import { orderTags } from './lib/tag-groups.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
// boundRequestStrings: a string's maxLength by format where the spec states none, else by origin.
const DEFAULT_MAX_LENGTH = { 'date-time': 64, date: 32, time: 32, uri: 2048, url: 2048, email: 254, uuid: 36 };
const DEFAULT_MAX_LENGTH_TEXT = 4096;
const DEFAULT_MAX_LENGTH_PROVIDER = 65536;
// declareRateLimits: operations outside the server's rate limit.
const UNLIMITED = new Set(['receiveProviderWebhook']);

const root = new URL('..', import.meta.url).pathname;
const out = join(root, '.tmp', 'tsp-output');
const check = process.argv.includes('--check');

rmSync(out, { recursive: true, force: true });
try {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/@typespec/compiler/cmd/tsp.js'), 'compile', 'spec/main.tsp', '--config', 'tspconfig.yaml', '--output-dir', out],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' },
  );
} catch (error) {
  // The compiler prints its diagnostics on stdout.
  process.stderr.write(`${error.stdout ?? ''}${error.stderr ?? ''}`);
  console.error('spec/ does not compile: fix the diagnostics above.');
  process.exit(1);
}

const emitted = (version, service) => parse(readFileSync(join(out, 'openapi3', version, `openapi.${service}.yaml`), 'utf8'));

const files = new Map();
for (const api of APIS) {
  const doc30 = fixNullableRefs30(normalise(emitted('3.0.0', api.service)));
  const doc31 = markFileParts(normalise(emitted('3.1.0', api.service)));
  for (const doc of [doc30, doc31]) {
    closeObjects(doc, api.name);
    boundRequestStrings(doc);
    declareRateLimits(doc, api.name);
    addProblemExamples(doc, api.name);
  }
  if (api.webhooks) mergeWebhooks(doc31, normalise(emitted('3.1.0', api.webhooks)), api.name);
  for (const doc of [doc30, doc31]) {
    nameEnumConstants(doc, api.name);
    orderTags(doc, api.name);
  }
  files.set(`generated/${api.name}/openapi.3.0.yaml`, toYaml(doc30));
  files.set(`generated/${api.name}/openapi.3.1.yaml`, toYaml(doc31));
  files.set(`generated/${api.name}/types.ts`, await toTypes(doc31, api.name));
  files.set(`generated/${api.name}/openapi.3.1.dereferenced.json`, `${JSON.stringify(dereference(withoutEnumNames(doc31)).doc, null, 2)}\n`);
}

if (check) {
  const stale = [...files].filter(([path, text]) => !existsSync(join(root, path)) || readFileSync(join(root, path), 'utf8') !== text);
  for (const [path] of stale) console.error(`out of date: ${path}`);
  if (stale.length) {
    console.error('generated/ differs from the spec: run `npm run generate` and commit the result.');
    process.exit(1);
  }
  console.log(`generated/ is up to date (${files.size} files).`);
} else {
  for (const [path, text] of files) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  console.log(`wrote ${files.size} files to generated/`);
}

/**
 * Removes emitter noise some tools choke on (`servers[].variables: {}`), marks every server as
 * public (`x-internal: false`: OWASP API9 asks each server's audience), and gives a 3.1 file
 * body (`{contentMediaType}` alone) its `type: string`, without which Prism cannot serve it.
 */
function normalise(doc) {
  for (const server of doc.servers ?? []) {
    if (server.variables && !Object.keys(server.variables).length) delete server.variables;
    server['x-internal'] = false;
  }
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      for (const res of Object.values(op?.responses ?? {})) {
        for (const media of Object.values(res?.content ?? {})) {
          const schema = media.schema;
          if (schema && typeof schema.contentMediaType === 'string' && Object.keys(schema).length === 1) media.schema = { type: 'string', ...schema };
        }
      }
    }
  }
  return doc;
}

/**
 * Marks each file part of a 3.1 multipart body (`HttpPart<File>`, which the emitter writes as a
 * schema with no type) `contentMediaType: application/octet-stream`: OpenAPI 3.1's spelling of
 * 3.0's `format: binary` (the 3.0 document has it), so tools send the part as a file, with a
 * `filename` in its Content-Disposition, rather than as a text field.
 */
function markFileParts(doc) {
  const schemaOf = (s) => (s?.$ref ? doc.components?.schemas?.[s.$ref.split('/').pop()] : s);
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      for (const [type, media] of Object.entries(op?.requestBody?.content ?? {})) {
        if (!type.startsWith('multipart/')) continue;
        for (const part of Object.values(schemaOf(media.schema)?.properties ?? {})) {
          const untyped = part && Object.keys(part).every((k) => k === 'description');
          if (untyped) part.contentMediaType = 'application/octet-stream';
        }
      }
    }
  }
  return doc;
}

/**
 * Gives every named string enum `x-enum-varnames` prefixed with the enum's name
 * (`AGENT_STATUS_ACTIVE`): openapi-generator's clients name enum constants from it, and its `go`
 * client, whose constants share one package namespace, otherwise declares `ACTIVE` once per enum
 * holding `active` and does not compile (with default options, no `enumClassPrefix`). A value's
 * part of the name is its words, upper case (a URL's last path segment; a leading `-`, a
 * descending sort, is `desc`; `*` is `all`); names must stay unique within the enum.
 */
function nameEnumConstants(doc, apiName) {
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
    if (!Array.isArray(schema.enum) || !schema.enum.every((v) => typeof v === 'string')) continue;
    const prefix = name.replace(/([a-z0-9])([A-Z])/g, '$1_$2');
    const names = schema.enum.map((value) => {
      let words = /^https?:\/\//.test(value) ? value.replace(/\/+$/, '').split('/').pop() : value;
      if (words === '*') words = 'all';
      words = words.replace(/^-/, 'desc_');
      return `${prefix}_${words.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`.toUpperCase();
    });
    const seen = new Set();
    for (const n of names) {
      const key = n.toLowerCase();
      if (seen.has(key)) throw new Error(`${apiName}: enum ${name} has two values named ${n}; rename a value`);
      seen.add(key);
    }
    schema['x-enum-varnames'] = names;
  }
}

/** A copy without `x-enum-varnames` (names for generators; inlined at every use they only add bulk). */
function withoutEnumNames(doc) {
  const copy = structuredClone(doc);
  for (const schema of Object.values(copy.components?.schemas ?? {})) delete schema['x-enum-varnames'];
  return copy;
}

/** Moves the events service's paths into `webhooks:` and merges its components; refuses clashes. */
function mergeWebhooks(doc, events, apiName) {
  doc.webhooks = {};
  for (const [path, item] of Object.entries(events.paths ?? {})) {
    for (const op of Object.values(item)) if (op && typeof op === 'object' && op.responses) op.security = [];
    doc.webhooks[path.replace(/^\//, '')] = item;
  }
  for (const [section, entries] of Object.entries(events.components ?? {})) {
    doc.components ??= {};
    doc.components[section] ??= {};
    for (const [name, value] of Object.entries(entries)) {
      const existing = doc.components[section][name];
      if (existing && JSON.stringify(existing) !== JSON.stringify(value)) {
        throw new Error(`${apiName}: webhook component ${section}.${name} clashes with the API's own; rename one of them`);
      }
      doc.components[section][name] = value;
    }
    doc.components[section] = sortKeys(doc.components[section]);
  }
  const tags = new Set((doc.tags ?? []).map((t) => t.name));
  for (const tag of events.tags ?? []) if (!tags.has(tag.name)) (doc.tags ??= []).push(tag);
}

/**
 * The 3.0 emitter writes `T | null` for a named T as `{allOf: [{$ref: T}], nullable: true}`,
 * which is not valid 3.0.3 (`nullable` needs a sibling `type`) and refuses null everywhere.
 * Rewrite it the way the OpenAPI TSC recommends for 3.0: `anyOf: [T, {type, nullable, enum: [null]}]`.
 */
function fixNullableRefs30(doc) {
  const typeOf = (ref) => {
    const target = ref
      .slice(2)
      .split('/')
      .reduce((n, k) => n?.[k], doc);
    if (!target) return 'object';
    if (target.type) return target.type;
    if (target.enum) return typeof target.enum[0] === 'number' ? 'number' : 'string';
    return 'object';
  };
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    if (node.nullable === true && Array.isArray(node.allOf) && node.allOf.length === 1 && node.allOf[0].$ref) {
      // Also with a sibling `type` (a nullable reference to a scalar): `allOf` still refuses null.
      const [ref] = node.allOf;
      delete node.allOf;
      delete node.nullable;
      delete node.type;
      node.anyOf = [ref, { type: typeOf(ref.$ref), nullable: true, enum: [null] }];
    } else if (node.nullable === true && !node.type && Array.isArray(node.anyOf ?? node.oneOf)) {
      const branches = node.anyOf ?? node.oneOf;
      delete node.nullable;
      branches.push({ type: branches[0]?.type ?? 'string', nullable: true, enum: [null] });
    }
    Object.values(node).forEach(visit);
  };
  visit(doc);
  return doc;
}

/**
 * One spelling of a closed object: the emitters write TypeSpec's `...Record<never>` as
 * `additionalProperties: {not: {}}` (3.0) and `unevaluatedProperties: {not: {}}` (3.1), and other
 * closed models as `additionalProperties: false`. All become `additionalProperties: false`, which
 * means the same where no allOf/anyOf/oneOf adds properties (none does today; refused if one does).
 */
function closeObjects(doc, apiName) {
  const closed = (v) => v && typeof v === 'object' && Object.keys(v).length === 1 && v.not && !Object.keys(v.not).length;
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const key of ['additionalProperties', 'unevaluatedProperties']) {
      if (!closed(node[key])) continue;
      if (node.allOf || node.anyOf || node.oneOf || node.$ref) {
        throw new Error(`${apiName}: a closed object composed with allOf/anyOf/oneOf cannot be written as additionalProperties: false`);
      }
      delete node[key];
      node.additionalProperties = false;
    }
    Object.values(node).forEach(visit);
  };
  visit(doc);
}

/**
 * Every string a client sends (parameters and request bodies, followed through references) has a
 * `maxLength`. The spec states it where a field has a natural bound; elsewhere this writes one by
 * format, and the server enforces it as it enforces the rest of the document. Payloads the chat
 * provider sends (its webhook, `Provider*` schemas) get a bound that never refuses a real one.
 */
function boundRequestStrings(doc) {
  const seen = new Set();
  const resolve = (ref) =>
    ref
      .slice(2)
      .split('/')
      .reduce((n, k) => n?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  const visit = (schema, provider) => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    if (schema.$ref) {
      const name = schema.$ref.split('/').pop();
      return visit(resolve(schema.$ref), provider || name.startsWith('Provider'));
    }
    const types = [schema.type].flat();
    if (types.includes('string') && schema.maxLength === undefined && !schema.enum && schema.const === undefined && schema.format !== 'binary') {
      schema.maxLength = DEFAULT_MAX_LENGTH[schema.format] ?? (provider ? DEFAULT_MAX_LENGTH_PROVIDER : DEFAULT_MAX_LENGTH_TEXT);
    }
    for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) for (const s of schema[key] ?? []) visit(s, provider);
    for (const s of Object.values(schema.properties ?? {})) visit(s, provider);
    for (const key of ['items', 'additionalProperties', 'unevaluatedProperties', 'not']) visit(schema[key], provider);
  };
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of [item, ...METHODS.map((m) => item[m]).filter(Boolean)]) {
      for (const p of op.parameters ?? []) visit(p.$ref ? resolve(p.$ref).schema : p.schema, false);
      for (const media of Object.values(op.requestBody?.content ?? {})) visit(media.schema, false);
    }
  }
}

/**
 * The rate limit the server applies to every operation (server/plugins/rate-limits.ts), declared:
 * a 429 with `Retry-After` on each, and `RateLimit-Limit`, `-Remaining` and `-Reset` on every other
 * answer but the 401 (authentication runs before the limit). Not limited:
 * `receiveProviderWebhook` (server/apis/messaging/provider/signature.ts).
 */
function declareRateLimits(doc, apiName) {
  const operations = Object.values(doc.paths ?? {}).flatMap((item) => METHODS.map((m) => item[m]).filter(Boolean));
  const limited = operations.filter((op) => !UNLIMITED.has(op.operationId));
  const model = limited.map((op) => op.responses?.['429']).find((r) => r?.headers?.['Retry-After']);
  if (!model) throw new Error(`${apiName}: no 429 with Retry-After to copy`);
  doc.components ??= {};
  doc.components.headers ??= {};
  const headers = {
    'RateLimit-Limit': ['Requests allowed in the current window for this credential or address.', 600],
    'RateLimit-Remaining': ['Requests left in the current window.', 599],
    'RateLimit-Reset': ['Seconds until the current window ends.', 42],
  };
  for (const [name, [description, example]] of Object.entries(headers)) {
    doc.components.headers[name] = { description, schema: { type: 'integer', format: 'int32', minimum: 0 }, example };
  }
  for (const op of limited) {
    op.responses['429'] ??= structuredClone(model);
    for (const [status, response] of Object.entries(op.responses)) {
      if (status === '401' || status === '429' || response.$ref) continue;
      response.headers ??= {};
      for (const name of Object.keys(headers)) response.headers[name] ??= { $ref: `#/components/headers/${name}` };
    }
  }
}

function sortKeys(obj) {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function toYaml(doc) {
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}

async function toTypes(doc, apiName) {
  const ast = await openapiTS(structuredClone(doc), { alphabetize: false, exportType: false, defaultNonNullable: false });
  return `// Generated by \`npm run generate\` from generated/${apiName}/openapi.3.1.yaml. Do not edit.\n\n${astToString(ast)}`;
}
