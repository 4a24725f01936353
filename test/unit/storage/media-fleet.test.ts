// Inbound media on a fleet: two apps on one database and one bucket (S3, STORAGE_TEST_S3), each
// with a DATA_DIR of its own. A photo a customer sent is fetched from the provider once, by the
// instance that first serves it; the other instance serves it from the shared cache, a Range too.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256Header } from '#server/lib/signatures.js';
import type { ObjectStorage } from '#server/lib/storage/types.js';
import type { Store } from '#server/store/db.js';
import { FAKE_PHONE_NUMBER_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { buildShared } from '#test/helper.js';
import { backends } from '#test/support/object-storage.js';
import { openTestStore } from '#test/support/store.js';
import { cloudTenant, type Tenant } from '../messaging/inbox/support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 240_000 });

const s3 = backends.find((b) => b.name === 's3');

describe.skipIf(!s3)('inbound media across instances on S3', () => {
  const backend = s3!;
  let fake: FakeProvider;
  let store: Store;
  let storage: ObjectStorage;
  let close: () => Promise<void>;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let cloud: Tenant;

  beforeAll(async () => {
    fake = await new FakeProvider().start();
    ({ storage, close } = await backend.open());
    store = await openTestStore();
    const env = { GRAPH_API_URL: fake.baseUrl, SECRET_KEY: 'fleet-media-secret-key-shared-by-both-instances' };
    a = await buildShared({ env, overrides: { store, storage } });
    b = await buildShared({ env, overrides: { store, storage } });
    cloud = await cloudTenant(a);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await store?.close();
    await close?.();
    await fake?.stop();
  });

  it("fetched from the provider once for both instances; B serves A's cached copy, by range too", async () => {
    const bytes = randomBytes(5000);
    fake.inboundMedia.set('2003383421387256', { type: 'image/jpeg', bytes });
    const raw = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550100100', phone_number_id: FAKE_PHONE_NUMBER_ID },
                contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
                messages: [
                  {
                    from: '16505551234',
                    id: `wamid.${randomBytes(12).toString('hex')}`,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: 'image',
                    image: { mime_type: 'image/jpeg', id: '2003383421387256' },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    const delivered = await a.inject({
      method: 'POST',
      url: '/api/webhook/chatapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(a.platform.providerAppSecret, raw) },
      payload: raw,
    });
    expect(delivered.statusCode).toBe(200);
    const { id } = await store.db
      .selectFrom('messages')
      .select('id')
      .where('direction', '=', 'inbound')
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    const url = `/api/chatapp/messages/${id}/media`;
    const first = await a.inject({ url, headers: cloud.headers });
    expect(first.statusCode, first.body).toBe(200);
    expect(Buffer.compare(first.rawPayload, bytes)).toBe(0);
    expect(fake.requests.filter((r) => r.method === 'GET').length).toBeGreaterThan(0);
    fake.reset();
    const second = await b.inject({ url, headers: cloud.headers });
    expect(second.statusCode).toBe(200);
    expect(Buffer.compare(second.rawPayload, bytes)).toBe(0);
    const part = await b.inject({ url, headers: { ...cloud.headers, range: 'bytes=100-199' } });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe('bytes 100-199/5000');
    expect(Buffer.compare(part.rawPayload, bytes.subarray(100, 200))).toBe(0);
    expect(fake.requests.filter((r) => r.method === 'GET')).toEqual([]); // not fetched again
    const cached: string[] = [];
    for await (const o of storage.list('media-cache/')) cached.push(o.key);
    expect(cached).toHaveLength(1);
  });
});
