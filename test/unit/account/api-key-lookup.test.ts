// bad-inputs A11 as a unit test (no timing thresholds): a key is found by its keyed digest, the secret
// never reaches SQL, and the stored digest is confirmed with crypto.timingSafeEqual.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import crypto from 'node:crypto';
import type { Kysely, RootOperationNode } from 'kysely';
import { ApiKeyVerifier, findByDigest, newApiKeySecret } from '#server/auth/api-keys.js';
import { SecretBox } from '#server/lib/secrets.js';
import type { Store } from '#server/store/db.js';
import type { Database } from '#server/store/schema.js';
import { openTestStore } from '#test/support/store.js';

describe('API key lookup (A11)', () => {
  let store: Store;
  let db: Kysely<Database>;
  const queries: RootOperationNode[] = [];
  const secrets = new SecretBox('a-test-master-key-of-at-least-32-characters');
  const key = newApiKeySecret(secrets);
  beforeAll(async () => {
    store = await openTestStore();
    await store.db.insertInto('workspaces').values({ id: 'ws_lookup0000000000', name: 'Lookup', slug: 'lookup' }).execute();
    await store.db
      .insertInto('api_keys')
      .values({
        id: 'key_lookup000000000',
        workspace_id: 'ws_lookup0000000000',
        name: 'k',
        kind: 'messaging',
        scopes: ['messaging:read'],
        prefix: key.prefix,
        digest: key.digest,
      })
      .execute();
    db = store.db.withPlugin({
      transformQuery: ({ node }) => (queries.push(node), node),
      transformResult: async ({ result }) => result,
    });
  });
  afterAll(async () => {
    await store.close();
  });

  it('A11 the lookup goes by digest: WHERE digest = $1, never the secret', () => {
    const compiled = findByDigest(store.db, key.digest).compile();
    expect(compiled.sql).toMatch(/where "digest" = \$1$/);
    expect(compiled.parameters).toEqual([key.digest]);
  });

  it('A11 a real key is confirmed with timingSafeEqual over the digests', async () => {
    const verifier = new ApiKeyVerifier({ db, secrets, now: () => new Date() });
    const timingSafeEqual = vi.spyOn(crypto, 'timingSafeEqual');
    queries.length = 0;
    try {
      expect(await verifier.verify(key.secret, 'messaging')).toMatchObject({ id: 'key_lookup000000000', workspaceId: 'ws_lookup0000000000' });
      const sent = JSON.stringify(queries);
      expect(sent).toContain(key.digest);
      expect(sent).not.toContain(key.secret);
      expect(timingSafeEqual).toHaveBeenCalledWith(Buffer.from(key.digest, 'hex'), Buffer.from(key.digest, 'hex'));
    } finally {
      timingSafeEqual.mockRestore();
    }
  });

  it('A11 a key one character off is refused; the near miss never reaches SQL either', async () => {
    const verifier = new ApiKeyVerifier({ db, secrets, now: () => new Date() });
    const near = key.secret.slice(0, -1) + (key.secret.endsWith('a') ? 'b' : 'a');
    queries.length = 0;
    expect(await verifier.verify(near, 'messaging')).toBeNull();
    expect(JSON.stringify(queries)).not.toContain(near);
    expect(JSON.stringify(queries)).toContain(secrets.digest(near));
  });

  it('A2 malformed values (wrong prefix, length, non-ASCII) are refused without a query', async () => {
    const verifier = new ApiKeyVerifier({ db, secrets, now: () => new Date() });
    queries.length = 0;
    for (const value of ['', 'sk_test_contract', `mk_${'a'.repeat(41)}`, `mk_${'é'.repeat(40)}`, `${key.secret} `]) {
      expect(await verifier.verify(value, 'messaging')).toBeNull();
    }
    expect(queries).toEqual([]);
  });

  it('a key of another kind is refused (a Messaging key opens only Messaging)', async () => {
    const verifier = new ApiKeyVerifier({ db, secrets, now: () => new Date() });
    expect(await verifier.verify(key.secret, 'login')).toBeNull();
  });
});
