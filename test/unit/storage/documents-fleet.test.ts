// Connect documents on a fleet: two apps on one database, each with a DATA_DIR of its own, and
// one shared storage. A document uploaded through A opens and downloads through B (with a Range
// too), a new version uploaded through B is served through A, and a delete through B leaves no
// object behind. Then the orphan sweep, both sides. On S3 (STORAGE_TEST_S3: moto in CI).
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ORPHAN_AFTER_MS, sweepDocumentFiles } from '#server/apis/connect/content/storage.js';
import type { ObjectStorage } from '#server/lib/storage/types.js';
import type { Store } from '#server/store/db.js';
import { buildShared } from '#test/helper.js';
import { backends } from '#test/support/object-storage.js';
import { openTestStore } from '#test/support/store.js';
import { DOCS, multipart, newDocument, newLink, pdf, slugOf, tenant, type Tenant } from '../connect/content/support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 });

async function objects(storage: ObjectStorage): Promise<string[]> {
  const out: string[] = [];
  for await (const o of storage.list('documents/')) out.push(o.key);
  return out.sort();
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

// On S3 only: the disk backend's document path is the Connect suites' (test/unit/connect/content/),
// and two more apps per run would slow `npm test` for what a shared directory trivially gives.
const s3 = backends.find((b) => b.name === 's3');

describe.skipIf(!s3)('documents across instances on S3', () => {
  const backend = s3!;
  let store: Store;
  let storage: ObjectStorage;
  let close: () => Promise<void>;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let owner: Tenant;

  beforeAll(async () => {
    ({ storage, close } = await backend.open());
    store = await openTestStore();
    // Each app gets its own DATA_DIR from the helper; only the database and the storage are shared.
    const env = { SECRET_KEY: 'fleet-documents-secret-key-shared-by-both-instances' };
    a = await buildShared({ env, overrides: { store, storage } });
    b = await buildShared({ env, overrides: { store, storage } });
    owner = await tenant(a, `fleet-docs-${backend.name}`);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await store?.close();
    await close?.();
  });

  it('uploaded on A: the file opens and downloads on B, whole and by range', async () => {
    expect(a.config.dataDir).not.toBe(b.config.dataDir);
    const bytes = pdf(4);
    const doc = await newDocument(a, owner, { bytes });
    const link = await newLink(a, owner, doc.id, { allow_download: true });
    const path = `/l/${slugOf(link.url)}/file`;
    const whole = await b.inject({ url: path });
    expect(whole.statusCode, whole.body).toBe(200);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expect(sha(whole.rawPayload)).toBe(sha(bytes));
    const download = await b.inject({ url: `${path}?download=1` });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-disposition']).toMatch(/^attachment/);
    expect(sha(download.rawPayload)).toBe(sha(bytes));
    const part = await b.inject({ url: path, headers: { range: 'bytes=0-7' } });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 0-7/${bytes.length}`);
    expect(part.rawPayload.toString('latin1')).toBe(bytes.subarray(0, 8).toString('latin1'));
  });

  it('a new version uploaded on B is what A serves; a delete on B leaves no object of any version', async () => {
    const before = await objects(storage);
    const doc = await newDocument(a, owner, { bytes: pdf(2) });
    const link = await newLink(a, owner, doc.id);
    const v2 = pdf(6);
    const { payload, headers } = multipart({ bytes: v2, filename: 'v2.pdf' });
    const res = await b.inject({ method: 'POST', url: `${DOCS}/${doc.id}/versions`, headers: { ...owner.auth, ...headers }, payload });
    expect(res.statusCode, res.body).toBe(201);
    const served = await a.inject({ url: `/l/${slugOf(link.url)}/file` });
    expect(served.statusCode).toBe(200);
    expect(sha(served.rawPayload)).toBe(sha(v2));
    expect((await objects(storage)).length).toBe(before.length + 2);
    const deleted = await b.inject({ method: 'DELETE', url: `${DOCS}/${doc.id}`, headers: owner.auth });
    expect(deleted.statusCode).toBe(204);
    expect(await objects(storage)).toEqual(before);
    expect((await a.inject({ url: `/l/${slugOf(link.url)}/file` })).statusCode).toBe(410);
  });

  it('the sweep removes objects no live row names once they are old enough, and counts live rows without their object', async () => {
    const doc = await newDocument(a, owner, { bytes: pdf(1) });
    const row = await store.db.selectFrom('documents').select('storage_key').where('id', '=', doc.id).executeTakeFirstOrThrow();
    // An object without a row: an upload cut off between the object and the commit.
    await storage.put('documents/orphanorphanorphanorphanorphan00', Buffer.from('%PDF-1.4 orphan'));
    const now = new Date(Date.now() + ORPHAN_AFTER_MS + 60_000);
    const young = await sweepDocumentFiles(a.platform, new Date());
    expect(young.orphanObjects).toBe(0); // it may still be an upload whose row is being committed
    // A row without its object: removed behind the server's back.
    await storage.remove(`documents/${row.storage_key}`);
    await store.db
      .updateTable('document_versions')
      .set({ created_at: new Date(Date.now() - 2 * ORPHAN_AFTER_MS) })
      .where('document_id', '=', doc.id)
      .execute();
    const old = await sweepDocumentFiles(a.platform, now);
    expect(old).toEqual({ orphanObjects: 1, missingObjects: 1 });
    const keys = await objects(storage);
    expect(keys).not.toContain('documents/orphanorphanorphanorphanorphan00');
    // Every object left is named by a live row.
    const live = await store.db
      .selectFrom('document_versions as v')
      .innerJoin('documents as d', 'd.id', 'v.document_id')
      .select('v.storage_key')
      .where('d.deleted_at', 'is', null)
      .execute();
    expect(keys.map((k) => k.slice('documents/'.length)).every((k) => live.some((r) => r.storage_key === k))).toBe(true);
  });
});
