// What every published document states, over the eight generated ones (scripts/generate.mjs):
// nullable references a 3.0 tool reads as nullable, closed objects in one spelling, a maxLength
// on every string a client sends, the rate-limit headers and 429 the server sends, standard
// security schemes, and servers a client can point anywhere.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

type Node = Record<string, any>;
const APIS = ['account', 'connect', 'login', 'messaging'];
const VERSIONS = ['3.0', '3.1'];
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const load = (api: string, version: string): Node => parse(readFileSync(new URL(`../../../generated/${api}/openapi.${version}.yaml`, import.meta.url), 'utf8'));
const docs = APIS.flatMap((api) => VERSIONS.map((version) => ({ api, version, doc: load(api, version) })));

const resolve = (doc: Node, ref: string): Node =>
  ref
    .slice(2)
    .split('/')
    .reduce((n, k) => n?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);

function walk(node: unknown, visit: (n: Node, path: string) => void, path = ''): void {
  if (Array.isArray(node)) {
    node.forEach((v, i) => walk(v, visit, `${path}/${i}`));
    return;
  }
  if (!node || typeof node !== 'object') return;
  visit(node as Node, path);
  for (const [k, v] of Object.entries(node)) walk(v, visit, `${path}/${k}`);
}

function operations(doc: Node): { path: string; method: string; op: Node; item: Node }[] {
  return Object.entries<Node>(doc.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method], item })),
  );
}

describe.each(docs)('$api $version', ({ doc }) => {
  it('a nullable schema states its type (3.0: `nullable` beside allOf or $ref refuses null)', () => {
    const offenders: string[] = [];
    walk(doc, (n, path) => {
      if (n.nullable === true && (!n.type || n.allOf || n.$ref)) offenders.push(path);
    });
    expect(offenders).toEqual([]);
  });

  it('closes objects with `additionalProperties: false` only (no `{not: {}}`)', () => {
    const offenders: string[] = [];
    walk(doc, (n, path) => {
      for (const key of ['additionalProperties', 'unevaluatedProperties']) {
        const v = n[key];
        if (v && typeof v === 'object' && v.not && !Object.keys(v.not).length) offenders.push(`${path}/${key}`);
      }
    });
    expect(offenders).toEqual([]);
  });

  it('has a maxLength on every string a client sends (parameters and request bodies)', () => {
    const offenders = new Set<string>();
    const seen = new Set<unknown>();
    const visit = (s: Node | undefined, where: string) => {
      if (!s || typeof s !== 'object' || seen.has(s)) return;
      seen.add(s);
      if (s.$ref) {
        visit(resolve(doc, s.$ref), s.$ref);
        return;
      }
      const types = [s.type].flat();
      if (types.includes('string') && s.maxLength === undefined && !s.enum && s.const === undefined && s.format !== 'binary') offenders.add(where);
      for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) for (const x of s[key] ?? []) visit(x, where);
      for (const [name, x] of Object.entries<Node>(s.properties ?? {})) visit(x, `${where}.${name}`);
      for (const key of ['items', 'additionalProperties', 'unevaluatedProperties', 'not']) visit(s[key], `${where}[]`);
    };
    for (const { op, item } of operations(doc)) {
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const param = p.$ref ? resolve(doc, p.$ref) : p;
        visit(param.schema, `${op.operationId} ${param.in} ${param.name}`);
      }
      for (const media of Object.values<Node>(op.requestBody?.content ?? {})) visit(media.schema, `${op.operationId} body`);
    }
    expect([...offenders]).toEqual([]);
  });

  it('declares the rate limit on every operation: a 429 with Retry-After, RateLimit-* on the other answers but 401', () => {
    const unlimited = new Set(['receiveProviderWebhook']); // server/apis/messaging/provider/signature.ts
    const offenders: string[] = [];
    for (const { op } of operations(doc)) {
      if (unlimited.has(op.operationId)) continue;
      const limited = op.responses['429'];
      if (!limited?.headers?.['Retry-After']?.required) offenders.push(`${op.operationId} 429 Retry-After`);
      for (const [status, response] of Object.entries<Node>(op.responses)) {
        if (status === '401') continue;
        for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
          if (!response.headers?.[name]) offenders.push(`${op.operationId} ${status} ${name}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('uses standard security schemes only (apiKey, http bearer or basic, oauth2)', () => {
    const schemes = Object.entries<Node>(doc.components?.securitySchemes ?? {});
    const unknown = schemes.filter(([, s]) => !(s.type === 'apiKey' || s.type === 'oauth2' || (s.type === 'http' && /^(bearer|basic)$/i.test(s.scheme))));
    expect(unknown.map(([name]) => name)).toEqual([]);
    const key = doc.components?.securitySchemes?.ApiKeyHeader;
    if (key) {
      expect(key).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
      expect(key.description).toContain('Authorization: ApiKey <key>');
    }
  });

  it('names a server with scheme, host and port variables, and a production example', () => {
    const [own, production] = doc.servers;
    expect(own.url).toBe('{scheme}://{host}:{port}');
    expect(own.variables.scheme).toMatchObject({ default: 'http', enum: ['http', 'https'] });
    expect(own.variables.host.default).toBe('127.0.0.1');
    expect(own.variables.port.default).toBe('3000');
    expect(production.url).toMatch(/^https:\/\//);
  });
});
