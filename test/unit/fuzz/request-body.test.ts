// Findings of schemathesis (docs/fuzzing.md) that server/lib/request-body.ts and the 405 routes of
// server/app.ts fixed: each of these answered 500 or 404 before.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { expectProblem, workspace } from '#test/security/support.js';

describe('request bodies against the contract', () => {
  let app: FastifyInstance;
  // Authentication comes before the body: these cases carry real credentials.
  let owner: string;
  let connect: string;
  beforeAll(async () => {
    app = await buildShared();
    ({ owner, connect } = await workspace(app));
  }, 180_000);

  it('a required JSON body missing: 400 validation at /body', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/account/sessions' });
    const body = expectProblem(res, 400, 'validation');
    expect(body.errors).toEqual([{ pointer: '/body', detail: 'is required' }]);
  });

  it('a JSON body sent as text/plain: 415 naming the accepted type', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/sessions',
      headers: { 'content-type': 'text/plain' },
      payload: '{"email":"a@b.example","password":"x"}',
    });
    expect(expectProblem(res, 415, 'unsupported-media-type').detail).toContain('application/json');
  });

  it('multipart announced on an operation without a body: 415, not the parser error', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/api-keys/key_x/revoke',
      headers: { 'content-type': 'multipart/form-data', authorization: owner },
    });
    expectProblem(res, 415, 'unsupported-media-type');
  });

  it('multipart without a boundary on an upload: 400 malformed-body', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/connect/documents',
      headers: { 'content-type': 'multipart/form-data', authorization: connect },
      payload: 'x',
    });
    expectProblem(res, 400, 'malformed-body');
  });

  it('a JSON body on an operation without one is still accepted (clients send {} on bare POSTs)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/api-keys/key_AAAAAAAAAAAAAAAAAAAA/revoke',
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(401); // reaches authentication, not a body refusal
  });

  it('TRACE, OPTIONS and QUERY on a known path: 405 with Allow (QUERY without Content-Type was 400)', async () => {
    for (const method of ['TRACE', 'OPTIONS', 'QUERY'] as never[]) {
      const res = await app.inject({ method, url: '/api/account/me' });
      expectProblem(res, 405, 'method-not-allowed');
      expect(res.headers.allow).toContain('GET');
    }
  });
});
