// Routes are mounted by fastify-openapi-glue (server/apis/area.ts) from the documents the contract
// loader parsed, in the form glue reads cheapest (routingDocument): glue validates that form as a
// document of the contract's version, finds every operation in it, and mounts each one as a route
// of the app with our pipeline. patches/@seriousme+openapi-schema-validator+2.11.0.patch: glue's
// validator compiles the OpenAPI meta-schema once per process, not once per document and build.
import { Validator } from '@seriousme/openapi-schema-validator';
import Fastify, { type FastifyInstance } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_NAMES, contractOperations, routingDocument } from '#server/contract.js';
import { buildShared } from '../helper.js';

describe('fastify-openapi-glue mounts the contract', () => {
  it.each(API_NAMES)('reads every operation of the %s document from its routing form', async (api) => {
    const operations = contractOperations(api);
    const asked: string[] = [];
    const bare = Fastify();
    await bare.register(openapiGlue, {
      specification: routingDocument(api, operations),
      operationResolver: (operationId, method, path) => {
        asked.push(`${method} ${path} ${operationId}`);
        return async () => ({});
      },
    });
    await bare.ready();
    expect(asked.sort()).toEqual(operations.map((operation) => `${operation.method} ${operation.path} ${operation.operationId}`).sort());
    expect(operations.filter((operation) => !bare.hasRoute({ method: operation.method, url: operation.url }))).toEqual([]);
    await bare.close();
  });

  it('refuses an operation of another API in a routing form', () => {
    const [login] = contractOperations('login');
    expect(() => routingDocument('account', [login!])).toThrow(/login:\w+ is not an operation of account/);
  });

  it('compiles the OpenAPI meta-schema once for every validator of the process', () => {
    const first = new Validator() as unknown as { getAjvValidator(version: string): unknown };
    const second = new Validator() as unknown as { getAjvValidator(version: string): unknown };
    expect(second.getAjvValidator('3.1')).toBe(first.getAjvValidator('3.1'));
    // Other options than glue's (the default) get a compilation of their own.
    const logging = new Validator({ allErrors: true }) as unknown as { getAjvValidator(version: string): unknown };
    expect(logging.getAjvValidator('3.1')).not.toBe(first.getAjvValidator('3.1'));
  });

  describe('in an app', () => {
    let app: FastifyInstance;
    beforeAll(async () => {
      app = await buildShared();
    });

    it('has every operation of the four documents as a route, through glue', () => {
      expect(app.hasPlugin('fastify-openapi-glue')).toBe(true);
      const missing = contractOperations().filter((operation) => !app.hasRoute({ method: operation.method, url: operation.url }));
      expect(missing.map((operation) => `${operation.api}:${operation.operationId}`)).toEqual([]);
    });

    it('authenticates before validating: a bad body without a credential is 401, not 400', async () => {
      const res = await app.inject({ method: 'POST', url: '/api/contacts', payload: { nothing: true } });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    });
  });
});
