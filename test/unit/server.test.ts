// The server skeleton from outside: health, published documents, problem+json for unknown
// routes, malformed and invalid bodies, and 501 for operations not implemented yet.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parse } from 'yaml';
import { messagingHandlers } from '../../server/apis/messaging/handlers.js';
import { build, buildShared } from '../helper.js';

const NOT_IMPLEMENTED = 'https://chatapp.example/problems/not-implemented';

describe('server skeleton', () => {
  // Building the app compiles every route's schemas; one app serves these read-only checks.
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared();
  });

  it('answers /healthz once ready', async () => {
    const res = await app.inject('/healthz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it.each(['account', 'connect', 'login', 'messaging'])('serves the %s documents', async (api) => {
    for (const version of ['3.0', '3.1']) {
      const res = await app.inject(`/openapi/${api}.${version}.yaml`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/yaml/);
      expect(parse(res.body).openapi).toBe(version === '3.0' ? '3.0.0' : '3.1.0');
    }
  });

  it('answers an unknown route with 404 problem+json', async () => {
    const res = await app.inject('/no/such/route');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/not-found', status: 404, instance: '/no/such/route' });
  });

  it('answers malformed JSON with 400 malformed-body and no internals', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/tags', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, payload: '{"name": ' });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.type).toBe('https://chatapp.example/problems/malformed-body');
    expect(JSON.stringify(body)).not.toMatch(/at .*\.(js|ts):\d+|node_modules|SyntaxError/);
  });

  it('answers a body that breaks the schema with 400 validation naming each field', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/tags', headers: { 'x-api-key': 'k' }, payload: { name: 42, org_id: 'ws_123456789' } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.type).toBe('https://chatapp.example/problems/validation');
    const pointers = body.errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers).toContain('/body/name');
    expect(pointers).toContain('/body/org_id');
  });

  it('answers an operation without a handler with 501 naming it (every operation has one today: one is taken away here)', async () => {
    const handlers = messagingHandlers as Record<string, unknown>;
    const saved = handlers.createQuickReply;
    delete handlers.createQuickReply;
    let bare: FastifyInstance;
    try {
      bare = await build();
    } finally {
      handlers.createQuickReply = saved;
    }
    const res = await bare.inject({ method: 'POST', url: '/api/quick-replies', headers: { 'x-api-key': 'k' }, payload: { shortcut: 'hours', text: 'We open at 9.' } });
    expect(res.statusCode).toBe(501);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ type: NOT_IMPLEMENTED, status: 501, operation_id: 'createQuickReply' });
    // The app built with the handler answers the same request with its own rules (401 here: no such key).
    expect((await app.inject({ method: 'POST', url: '/api/quick-replies', headers: { 'x-api-key': 'k' }, payload: { shortcut: 'hours', text: 'We open at 9.' } })).statusCode).toBe(401);
  });

  it('answers an unsupported content type with 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/tags', headers: { 'content-type': 'text/csv', 'x-api-key': 'k' }, payload: 'a,b' });
    expect(res.statusCode).toBe(415);
    expect(res.json().type).toBe('https://chatapp.example/problems/unsupported-media-type');
  });
});
