// The inbound media cache over the platform's storage, on both backends (disk; S3 with
// STORAGE_TEST_S3): entries expire after the TTL, the least recently used go once the total
// passes the cap, a body over the limit leaves nothing behind, and keys never become names.
import { afterEach, describe, expect, it } from 'vitest';
import { MediaCache } from '#server/apis/messaging/media/inbound-cache.js';
import type { ObjectStorage } from '#server/lib/storage/types.js';
import { backends } from '#test/support/object-storage.js';

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

async function* chunks(...parts: Buffer[]) {
  for (const p of parts) yield p;
}

async function names(storage: ObjectStorage): Promise<string[]> {
  const out: string[] = [];
  for await (const o of storage.list('media-cache/')) out.push(o.key);
  return out;
}

describe.each(backends)('MediaCache on $name', (backend) => {
  async function cache(options: { maxTotalBytes?: number; ttlMs?: number } = {}) {
    const { storage, close } = await backend.open();
    opened.push(close);
    const clock = { t: Date.now() };
    const c = new MediaCache({ storage, maxTotalBytes: options.maxTotalBytes ?? 1_000_000, ttlMs: options.ttlMs ?? 60_000, now: () => clock.t });
    return { c, storage, clock };
  }

  it('keeps what was put, with its type and size, until the TTL passes; then the object goes', async () => {
    const { c, storage, clock } = await cache({ ttlMs: 60_000 });
    const put = await c.put('ws_a/msg_1', 'image/png', chunks(Buffer.from('abc'), Buffer.from('def')), 100);
    expect(put).toMatchObject({ mimeType: 'image/png', size: 6 });
    const stream = await c.open(put);
    let body = '';
    for await (const chunk of stream!) body += chunk;
    expect(body).toBe('abcdef');
    clock.t += 59_000;
    expect(await c.get('ws_a/msg_1')).toMatchObject({ mimeType: 'image/png', size: 6 });
    expect(await c.get('ws_b/msg_1')).toBeNull();
    clock.t += 2_000;
    expect(await c.get('ws_a/msg_1')).toBeNull();
    expect(await names(storage)).toEqual([]);
  });

  it('a body over the limit: 413 and no object left, not even a partial one', async () => {
    const { c, storage } = await cache();
    await expect(c.put('a', 'x/y', chunks(Buffer.alloc(60), Buffer.alloc(60)), 100)).rejects.toMatchObject({ status: 413 });
    expect(await names(storage)).toEqual([]);
    expect(await c.get('a')).toBeNull();
  });

  it('keys are digested: path separators and dots never reach a name', async () => {
    const { c, storage } = await cache();
    await c.put('../../etc/passwd', 'text/plain', chunks(Buffer.from('x')), 10);
    expect((await names(storage)).every((n) => /^media-cache\/[0-9a-f]{64}$/.test(n))).toBe(true);
  });

  it('over the size cap, older entries go first until the cache fits', async () => {
    const { c } = await cache({ maxTotalBytes: 250 });
    const body = () => chunks(Buffer.alloc(100, 1));
    await c.put('a', 'x/y', body(), 1000);
    await c.put('b', 'x/y', body(), 1000);
    await c.put('c', 'x/y', body(), 1000);
    const left = await Promise.all(['a', 'b', 'c'].map(async (k) => (await c.get(k)) !== null));
    expect(left.filter(Boolean)).toHaveLength(2);
    expect(left[2]).toBe(true); // the newest stays
  });
});

describe('MediaCache on disk: recency', () => {
  it('over the size cap, the least recently used entries go first', async () => {
    const { storage, close } = await backends[0]!.open();
    opened.push(close);
    const clock = { t: 1_000_000 };
    const c = new MediaCache({ storage, maxTotalBytes: 250, ttlMs: 60_000_000, now: () => clock.t });
    const body = () => chunks(Buffer.alloc(100, 1));
    await c.put('a', 'x/y', body(), 1000);
    clock.t += 1000;
    await c.put('b', 'x/y', body(), 1000);
    clock.t += 1000;
    expect(await c.get('a')).not.toBeNull(); // a is now more recent than b
    clock.t += 1000;
    await c.put('c', 'x/y', body(), 1000);
    expect(await c.get('b')).toBeNull();
    expect(await c.get('a')).not.toBeNull();
    expect(await c.get('c')).not.toBeNull();
  });
});
