// Every example in the generated documents (3.0 and 3.1; the dereferenced one is the 3.1
// document inlined, test/unit/mocks/dereferenced.test.ts) is valid against the schema it
// illustrates, and every documented error response has one: a real RFC 9457 problem.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkExamples } from '../../scripts/check-examples.mjs';
import { addProblemExamples, PROBLEM_EXAMPLES } from '../../scripts/lib/problem-examples.mjs';

const APIS = ['account', 'connect', 'login', 'messaging'];
const read = (api: string, version: string) => parse(readFileSync(new URL(`../../generated/${api}/openapi.${version}.yaml`, import.meta.url), 'utf8'));

describe('spec examples', () => {
  for (const api of APIS) {
    for (const version of ['3.0', '3.1']) {
      it(`${api} ${version}: every example is valid, every operation has success and error examples, every error response one`, () => {
        expect(checkExamples(read(api, version))).toEqual([]);
      });
    }
  }

  it('the shared problem examples are problems as the server writes them', () => {
    for (const [name, { value }] of Object.entries<any>(PROBLEM_EXAMPLES)) {
      expect(value.type, name).toMatch(/^https:\/\/chatapp\.example\/problems\/[a-z-]+$/);
      expect(value.title, name).not.toBe('string');
      expect(value.status, name).toBeGreaterThanOrEqual(400);
      expect(value.detail, name).toMatch(/\.$/);
    }
  });

  it('a shared example never replaces one the spec gives, and a clash of names stops the generation', () => {
    const op = (examples: object) => ({
      paths: {
        '/api/things/{id}': {
          get: {
            operationId: 'getThing',
            responses: {
              '200': { content: { 'application/json': { schema: { type: 'object' }, examples } } },
              '404': { content: { 'application/problem+json': { schema: {}, examples: { gone_thing: { value: {} } } } } },
              '401': { content: { 'application/problem+json': { schema: {} } } },
            },
          },
        },
      },
    });
    const doc: any = op({ found: { value: {} } });
    expect(addProblemExamples(doc, 'messaging')).toBe(1);
    const responses = doc.paths['/api/things/{id}'].get.responses;
    expect(Object.keys(responses['404'].content['application/problem+json'].examples)).toEqual(['gone_thing']);
    expect(responses['401'].content['application/problem+json'].examples).toEqual({ unauthorized: { $ref: '#/components/examples/unauthorized' } });
    expect(doc.components.examples.unauthorized.value.status).toBe(401);
    expect(() => addProblemExamples(op({ unauthorized: { value: {} } }), 'messaging')).toThrow(/clashes/);
  });
});
