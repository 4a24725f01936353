// The spec fixes the Python and Go generators need (docs/clients-python-go.md), kept: a form
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

  it('messaging: the multipart send body is a named schema and the JSON media kinds take media_id', () => {
    const d = doc('messaging', '3.0');
    const send = d.paths['/api/chatapp/send']!.post!;
    expect(send.requestBody!.content['multipart/form-data']!.schema.$ref).toBe('#/components/schemas/SendMediaUpload');
    for (const kind of ['SendImageMessage', 'SendVideoMessage', 'SendAudioMessage', 'SendDocumentMessage']) {
      expect(Object.keys(d.components.schemas[kind]!.properties ?? {})).toEqual(expect.arrayContaining(['mediaUrl', 'media_id']));
    }
  });
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
