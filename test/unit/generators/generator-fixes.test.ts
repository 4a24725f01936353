// The spec fixes the client generators need (docs/clients.md), kept: a form
// body has no `anyOf` (oapi-codegen's form encoder drops union fields without a word), and the
// token endpoint's body is optional (openapi-python-client 0.29.1 imports `Unset` only then;
// the smoke test imports every generated module) while the server still answers a missing
// body with an OAuth `invalid_request`.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildShared } from '#test/helper.js';
import { basic, consentSetup } from '../connect/oauth/support.js';

type Doc = {
  paths: Record<string, Record<string, { operationId?: string; requestBody?: { required?: boolean; content: Record<string, { schema: { $ref?: string } }> } }>>;
  components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }> };
};
const doc = (api: string, version: string): Doc => parse(readFileSync(new URL(`../../../generated/${api}/openapi.${version}.yaml`, import.meta.url), 'utf8'));
const operations = (d: Doc) => Object.values(d.paths).flatMap((item) => Object.values(item));

describe('generator fixes in the spec', () => {
  for (const api of ['connect', 'login', 'messaging']) {
    it(`${api}: no form-encoded body has a union property (Go form encoder)`, () => {
      const d = doc(api, '3.0');
      const offenders: string[] = [];
      for (const op of operations(d)) {
        const ref = op.requestBody?.content['application/x-www-form-urlencoded']?.schema.$ref;
        if (!ref) continue;
        const schema = d.components.schemas[ref.split('/').pop()!]!;
        for (const [name, prop] of Object.entries(schema.properties ?? {})) if (prop.anyOf || prop.oneOf) offenders.push(`${op.operationId}.${name}`);
      }
      expect(offenders).toEqual([]);
    });
  }

  // openapi-generator sends a multipart part whose schema is `allOf: [$ref]` (what a described
  // reference becomes in 3.0) as a JSON blob, which the server refuses for a text part.
  for (const api of ['account', 'connect', 'login', 'messaging']) {
    it(`${api}: every multipart text part is a plain schema or reference (openapi-generator)`, () => {
      const d = doc(api, '3.0');
      const offenders: string[] = [];
      for (const op of operations(d)) {
        const ref = op.requestBody?.content['multipart/form-data']?.schema.$ref;
        if (!ref) continue;
        const schema = d.components.schemas[ref.split('/').pop()!]!;
        for (const [name, prop] of Object.entries(schema.properties ?? {}))
          if (prop.allOf || prop.anyOf || prop.oneOf) offenders.push(`${op.operationId}.${name}`);
      }
      expect(offenders).toEqual([]);
    });
  }

  // openapi-generator skips a schema referenced only from form bodies (its default
  // skipFormModel), yet imports it in an operation that also takes JSON: the multipart send body
  // is inline so typescript-fetch and java clients compile with default options.
  it('messaging: the multipart send body is inline with its parts and the JSON media kinds take media_id', () => {
    const d = doc('messaging', '3.0');
    const send = d.paths['/api/chatapp/send']!.post!;
    const form = send.requestBody!.content['multipart/form-data']!.schema as { $ref?: string; properties?: Record<string, unknown> };
    expect(form.$ref).toBeUndefined();
    expect(Object.keys(form.properties ?? {})).toEqual(['contact_no', 'chatapp_phone_number', 'messageType', 'message', 'filename', 'reply_to', 'file']);
    for (const kind of ['SendImageMessage', 'SendVideoMessage', 'SendAudioMessage', 'SendDocumentMessage']) {
      expect(Object.keys(d.components.schemas[kind]!.properties ?? {})).toEqual(expect.arrayContaining(['mediaUrl', 'media_id']));
    }
  });

  // openapi-generator's go client declares every enum constant in one package namespace: with
  // default options two enums holding `active` would both declare ACTIVE.
  for (const api of ['account', 'connect', 'login', 'messaging']) {
    it(`${api}: every named enum names its constants, unique in the document (openapi-generator go)`, () => {
      const d = doc(api, '3.0');
      const names: string[] = [];
      for (const [name, schema] of Object.entries(d.components.schemas) as [string, { enum?: unknown[]; 'x-enum-varnames'?: string[] }][]) {
        if (!schema.enum) continue;
        expect(schema['x-enum-varnames'], name).toHaveLength(schema.enum.length);
        names.push(...schema['x-enum-varnames']!.map((n) => n.replace(/[^A-Za-z0-9]/g, '').toUpperCase()));
      }
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    });

    // A default beside `allOf: [$ref]` (a described reference in 3.0) to a plain string is written
    // unquoted by openapi-generator's java client; enums are fine (it names the constant).
    it(`${api}: no string default sits on a reference to a non-enum schema (openapi-generator java)`, () => {
      const d = doc(api, '3.0');
      const offenders: string[] = [];
      for (const [name, schema] of Object.entries(d.components.schemas)) {
        for (const [prop, value] of Object.entries(schema.properties ?? {}) as [string, { default?: unknown; allOf?: { $ref?: string }[] }][]) {
          const target = value.allOf?.[0]?.$ref?.split('/').pop();
          if (value.default !== undefined && target && !(d.components.schemas[target] as { enum?: unknown }).enum) offenders.push(`${name}.${prop}`);
        }
      }
      expect(offenders).toEqual([]);
    });
  }
});

describe('token endpoint without a body', () => {
  it('answers invalid_request (an OAuth error), not a schema problem', { timeout: 90_000 }, async () => {
    const app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '10000' } });
    const { client } = await consentSetup(app);
    const res = await app.inject({ method: 'POST', url: '/api/oauth/token', headers: basic(client.client_id, client.client_secret!) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('the document keeps the body optional', () => {
    expect(doc('connect', '3.1').paths['/api/oauth/token']!.post!.requestBody!.required).toBeFalsy();
    expect(doc('connect', '3.1').paths['/api/oauth/revoke']!.post!.requestBody!.required).toBeFalsy();
  });
});
