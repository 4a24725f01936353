// The storage interface (server/lib/storage/) on both backends: the file system under DATA_DIR,
// and S3 against the S3-compatible server of STORAGE_TEST_S3 (moto in CI). Whole writes or
// nothing, streamed reads with ranges, metadata, listing, removal, and the refused key shapes.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRange } from '#server/lib/storage/send.js';
import type { ObjectStorage } from '#server/lib/storage/types.js';
import { parseStorageUrl } from '#server/lib/storage/url.js';
import { s3ClientConfig } from '#server/lib/storage/index.js';
import { backends } from '#test/support/object-storage.js';

async function text(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

async function* chunks(...parts: Buffer[]) {
  for (const p of parts) yield p;
}

async function keys(storage: ObjectStorage, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of storage.list(prefix)) out.push(o.key);
  return out.sort();
}

describe.each(backends)('storage on $name', (backend) => {
  let storage: ObjectStorage;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ storage, close } = await backend.open());
  });
  afterAll(() => close());

  it('answers the ping, then keeps a buffer whole with its digest, size and metadata', async () => {
    await storage.ping();
    const bytes = Buffer.from('hello, fleet');
    const put = await storage.put('documents/AAAA1111', bytes, { contentType: 'text/plain', metadata: { 'mime-type': 'text/plain' } });
    expect(put).toEqual({ size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    const info = await storage.stat('documents/AAAA1111');
    expect(info).toMatchObject({ size: bytes.length, metadata: { 'mime-type': 'text/plain' } });
    const read = await storage.read('documents/AAAA1111');
    expect(read?.size).toBe(bytes.length);
    expect((await text(read!.stream)).toString()).toBe('hello, fleet');
  });

  it('reads a byte range of the object, and answers null for an absent one', async () => {
    await storage.put('documents/range0000', Buffer.from('0123456789'));
    const part = await storage.read('documents/range0000', { start: 2, end: 5 });
    expect(part?.size).toBe(10);
    expect((await text(part!.stream)).toString()).toBe('2345');
    expect(await storage.read('documents/missing0')).toBeNull();
    expect(await storage.stat('documents/missing0')).toBeNull();
  });

  it('streams a body larger than one multipart part, and it reads back byte for byte', async () => {
    const part = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < part.length; i += 4096) part.writeUInt32LE(i, i);
    const parts = [part, part, part, part]; // 12 MiB: two parts of lib-storage's upload
    const digest = createHash('sha256');
    for (const p of parts) digest.update(p);
    const put = await storage.put('documents/large000', chunks(...parts));
    expect(put).toEqual({ size: 12 * 1024 * 1024, sha256: digest.digest('hex') });
    const read = await storage.read('documents/large000');
    const back = createHash('sha256');
    for await (const c of read!.stream) back.update(c);
    expect(back.digest('hex')).toBe(put.sha256);
  }, 60_000);

  it('a body over maxBytes is refused with the caller error and leaves nothing, not even a partial object', async () => {
    const refusal = new Error('too large');
    await expect(storage.put('media-cache/big', chunks(Buffer.alloc(60), Buffer.alloc(60)), { maxBytes: 100, tooLarge: () => refusal })).rejects.toBe(refusal);
    expect(await storage.stat('media-cache/big')).toBeNull();
    expect(await keys(storage, 'media-cache/')).toEqual([]);
  });

  it('lists a prefix with sizes, and a removed object is gone (removing it again is fine)', async () => {
    await storage.put('lists/a', Buffer.from('a'));
    await storage.put('lists/b', Buffer.from('bb'), { metadata: { x: '1' } });
    const listed: Record<string, number> = {};
    for await (const o of storage.list('lists/')) listed[o.key] = o.size;
    expect(listed).toEqual({ 'lists/a': 1, 'lists/b': 2 });
    await storage.remove('lists/b');
    await storage.remove('lists/b');
    expect(await keys(storage, 'lists/')).toEqual(['lists/a']);
    expect(await storage.read('lists/b')).toBeNull();
  });

  it("refuses keys that are not the server's own shapes", async () => {
    for (const key of ['../etc/passwd', 'documents/../x', '/abs', 'documents/', 'Documents/x', 'documents/a b', 'documents/x.meta.json']) {
      await expect(storage.put(key, Buffer.from('x')), key).rejects.toThrow(/invalid storage key/);
    }
  });
});

describe('storage settings', () => {
  it('STORAGE_URL: bucket, prefix and the query override the AWS variables; a custom endpoint is path-style', () => {
    const parsed = parseStorageUrl('s3://files/prod/docs?endpoint=http://127.0.0.1:9000&region=eu-west-1');
    expect(parsed).toEqual({ bucket: 'files', prefix: 'prod/docs/', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', forcePathStyle: undefined });
    expect(s3ClientConfig(parsed as never, { AWS_REGION: 'us-west-2' })).toMatchObject({
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
    });
    const plain = parseStorageUrl('s3://files');
    expect(plain).toMatchObject({ bucket: 'files', prefix: '' });
    expect(s3ClientConfig(plain as never, { AWS_REGION: 'us-west-2' })).toMatchObject({ region: 'us-west-2', forcePathStyle: false });
    expect(s3ClientConfig(plain as never, { AWS_ENDPOINT_URL_S3: 'http://minio:9000' })).toMatchObject({ endpoint: 'http://minio:9000', forcePathStyle: true });
    expect(parseStorageUrl('https://files')).toMatch(/must be s3:\/\/bucket/);
    expect(parseStorageUrl('s3://key:secret@files')).toMatch(/must not carry credentials/);
    expect(parseStorageUrl('s3://files?acl=public')).toMatch(/unknown option/);
  });

  it('Range: one range within the size; anything else is the whole file', () => {
    expect(parseRange('bytes=0-99', 1000)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=900-', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=-100', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=990-2000', 1000)).toEqual({ start: 990, end: 999 });
    for (const header of [undefined, 'bytes=1000-', 'bytes=5-1', 'bytes=0-1,5-6', 'items=0-1', 'bytes=-0', 'bytes=-']) {
      expect(parseRange(header, 1000), header).toBeUndefined();
    }
  });
});

describe.skipIf(!backends.some((b) => b.name === 's3'))('storage:migrate from disk to S3', () => {
  const backend = backends.find((b) => b.name === 's3')!;
  it('copies every document file, verified by digest; a second run finds them all present; the cache is not copied', async () => {
    const { DiskStorage } = await import('#server/lib/storage/disk.js');
    const { migrateStorage } = await import('#server/lib/storage/migrate.js');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'migrate-'));
    const source = new DiskStorage(dir);
    const { storage: target, close } = await backend.open();
    try {
      await source.put('documents/aaaaaaaa', Buffer.from('first'));
      await source.put('documents/bbbbbbbb', Buffer.alloc(100_000, 7));
      await source.put('media-cache/cccccccc', Buffer.from('cached'), { metadata: { 'mime-type': 'text/plain' } });
      const first = await migrateStorage(source, target);
      expect(first).toMatchObject({ copied: 2, present: 0, failed: [], bytes: 100_005 });
      expect(await keys(target, '')).toEqual(['documents/aaaaaaaa', 'documents/bbbbbbbb']);
      const again = await migrateStorage(source, target);
      expect(again).toMatchObject({ copied: 0, present: 2, failed: [] });
      // A copy that differs (changed in the bucket) is copied again.
      await target.put('documents/aaaaaaaa', Buffer.from('tampered'));
      expect(await migrateStorage(source, target)).toMatchObject({ copied: 1, present: 1, failed: [] });
      expect((await text((await target.read('documents/aaaaaaaa'))!.stream)).toString()).toBe('first');
    } finally {
      await close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
