// Every operation of the three seed documents is in the generated documents, with the seed's
// method and path (59 in all), and every operation has an operationId, a summary, a problem
// response and examples.
import { describe, expect, it } from 'vitest';
import { loadDocument } from '../contract/cases.js';

const SEED: Record<string, string[]> = {
  connect: ['GET /connect/authorize', 'POST /api/oauth/token'],
  login: ['POST /v1/auth/chatapp/start', 'GET /v1/auth/chatapp/events/{sessionId}', 'GET /v1/auth/chatapp/status/{sessionId}', 'POST /v1/auth/verify-token'],
  messaging: [
    'GET /api/chatapp/connections',
    'GET /api/chatapp/phone-numbers',
    'GET /api/chatapp/{wabaId}/phone-numbers',
    'POST /api/chatapp/{wabaId}/webhooks/setup',
    'POST /api/chatapp/workspace/sync',
    'GET /api/chatapp/{wabaId}/marketing-messages',
    'PUT /api/chatapp/{wabaId}/marketing-messages',
    'POST /api/chatapp/{wabaId}/marketing-messages/sync-status',
    'GET /api/contacts',
    'POST /api/contacts',
    'PUT /api/contacts/{id}',
    'GET /api/segments',
    'POST /api/segments',
    'GET /api/tags',
    'POST /api/tags',
    'GET /api/custom-fields',
    'POST /api/chatapp/send',
    'GET /api/chatapp/chats',
    'GET /api/chatapp/messages',
    'POST /api/chatapp/assign-chat',
    'POST /api/template/create',
    'POST /api/template/validate-media-url',
    'POST /api/template/sync-status',
    'GET /api/campaigns',
    'POST /api/campaigns',
    'GET /api/automation',
    'POST /api/automation',
    'GET /api/automation/node-types',
    'PATCH /api/automation/{flowId}/toggle',
    'POST /api/automation/{flowId}/test',
    'GET /api/automation/{flowId}/executions',
    'GET /api/chatbots',
    'POST /api/chatbots',
    'POST /api/chatbots/{id}/train',
    'GET /api/message-bots',
    'POST /api/message-bots',
    'GET /api/quick-replies',
    'GET /api/forms',
    'POST /api/forms',
    'PATCH /api/forms/{id}/publish',
    'GET /api/industry-packs/public',
    'GET /api/industry-packs/public/{slug}/preview',
    'POST /api/industry-packs/apply',
    'GET /api/subscriptions/usage',
    'GET /api/agent/all',
    'GET /api/google/connect',
    'GET /api/sequences',
    'GET /api/kanban-funnels',
    'POST /api/ecommerce-catalog/waba/{waba_id}/sync-catalogs',
    'GET /api/ecommerce-catalog/catalog/{catalog_id}/products',
    'POST /api/ecommerce-webhook/create',
    'POST /api/ecommerce-webhook/{id}/map-template',
    // The Login seed names the provider's inbound webhook; it lives in the Messaging document.
    'POST /api/webhook/chatapp',
  ],
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function operations(api: string) {
  const doc = loadDocument(api);
  return Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ key: `${m.toUpperCase()} ${path}`, op: item[m] })),
  );
}

describe('seed operations', () => {
  it('are 59 in all', () => {
    expect(Object.values(SEED).flat()).toHaveLength(59);
  });

  for (const [api, seed] of Object.entries(SEED)) {
    it(`${api}: every seed operation is in the document with its method and path`, () => {
      const keys = new Set(operations(api).map((o) => o.key));
      expect(seed.filter((s) => !keys.has(s))).toEqual([]);
    });
  }

  for (const api of ['account', 'connect', 'login', 'messaging']) {
    it(`${api}: every operation has an operationId, a summary, a description and an error response`, () => {
      for (const { key, op } of operations(api)) {
        expect(op.operationId, key).toMatch(/^[a-z][A-Za-z0-9]+$/);
        expect(op.summary, key).toBeTruthy();
        expect(op.description, key).toBeTruthy();
        const errors = Object.entries<any>(op.responses).filter(([code]) => /^[45]/.test(code));
        expect(errors.length, `${key} declares an error response`).toBeGreaterThan(0);
      }
    });
  }

  it('messaging: every operation an API key may call declares the 403 a key without its scope gets', () => {
    const doc = loadDocument('messaging');
    const keySchemes = new Set(['ApiKeyHeader']);
    const withKey = operations('messaging').filter(({ op }) =>
      ((op.security ?? doc.security) as Record<string, string[]>[]).some((r) => Object.keys(r).some((k) => keySchemes.has(k))),
    );
    expect(withKey.length).toBeGreaterThan(70);
    expect(withKey.filter(({ op }) => !op.responses['403']).map((o) => o.key)).toEqual([]);
  });

  it('operationIds are unique across all four documents', () => {
    const ids = ['account', 'connect', 'login', 'messaging'].flatMap((api) => operations(api).map((o) => o.op.operationId));
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('each 3.1 document but account has webhooks', () => {
    for (const api of ['connect', 'login', 'messaging']) {
      expect(Object.keys(loadDocument(api).webhooks ?? {}).length, api).toBeGreaterThan(0);
    }
  });
});
