// The server skeleton from outside: health, published documents, problem+json for unknown
// routes, malformed and invalid bodies, and 501 for operations not implemented yet.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parse } from 'yaml';
import { botsArea } from '#server/apis/messaging/bots/area.js';
import { build, buildShared } from '../helper.js';
import { createKey, signUp } from './account/support.js';

const NOT_IMPLEMENTED = 'https://chatapp.example/problems/not-implemented';

describe('server skeleton', () => {
  // Building the app compiles every route's schemas; one app serves these read-only checks.
  let app: FastifyInstance;
  let key: string;
  beforeAll(async () => {
    app = await buildShared();
    key = (await createKey(app, (await signUp(app)).token)).secret;
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
    const res = await app.inject({ method: 'POST', url: '/api/tags', headers: { 'content-type': 'application/json', 'x-api-key': key }, payload: '{"name": ' });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.type).toBe('https://chatapp.example/problems/malformed-body');
    expect(JSON.stringify(body)).not.toMatch(/at .*\.(js|ts):\d+|node_modules|SyntaxError/);
  });

  it('answers a body that breaks the schema with 400 validation naming each field', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/tags', headers: { 'x-api-key': key }, payload: { name: 42, org_id: 'ws_123456789' } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.type).toBe('https://chatapp.example/problems/validation');
    const pointers = body.errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers).toContain('/body/name');
    expect(pointers).toContain('/body/org_id');
  });

  it('refuses to start with an operation nobody handles, and answers 501 for one listed as not implemented', async () => {
    const handlers = botsArea.handlers!.messaging as Record<string, unknown>;
    const saved = handlers.createQuickReply;
    delete handlers.createQuickReply;
    let bare: FastifyInstance;
    try {
      await expect(build()).rejects.toThrow(/operations nobody handles .*messaging:createQuickReply/);
      botsArea.notImplemented = ['createQuickReply'];
      bare = await build();
    } finally {
      handlers.createQuickReply = saved;
      delete botsArea.notImplemented;
    }
    const request = (headers: Record<string, string>) =>
      bare.inject({ method: 'POST', url: '/api/quick-replies', headers, payload: { shortcut: 'hours', text: 'We open at 9.' } });
    // Authentication still comes first: an unknown key is 401 before the operation's 501.
    expect((await request({ 'x-api-key': 'k' })).statusCode).toBe(401);
    const key = await createKey(bare, (await signUp(bare)).token, { name: 'bare', scopes: ['messaging:read', 'messaging:write'] });
    const res = await request({ 'x-api-key': key.secret });
    expect(res.statusCode).toBe(501);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ type: NOT_IMPLEMENTED, status: 501, operation_id: 'createQuickReply' });
  });

  it('refuses to start when two areas handle one operation, naming both', async () => {
    const saved = botsArea.handlers!.messaging!.createQuickReply;
    const { formsArea } = await import('#server/apis/messaging/forms/area.js');
    const forms = formsArea.handlers!.messaging as Record<string, unknown>;
    forms.createQuickReply = saved;
    try {
      await expect(build()).rejects.toThrow(/createQuickReply is handled by both messaging\/bots and messaging\/forms/);
    } finally {
      delete forms.createQuickReply;
    }
  });

  it('answers an unsupported content type with 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/account/workspaces', headers: { 'content-type': 'text/csv' }, payload: 'a,b' });
    expect(res.statusCode).toBe(415);
    expect(res.json().type).toBe('https://chatapp.example/problems/unsupported-media-type');
  });
});
