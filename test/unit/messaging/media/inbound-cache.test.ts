// The inbound media cache in DATA_DIR: entries expire after the TTL, the least recently used go
// once the total passes the cap, a body over the limit leaves nothing behind, and keys never
// become paths.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MediaCache } from '#server/apis/messaging/media/inbound-cache.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function cache(options: { maxTotalBytes?: number; ttlMs?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'media-cache-'));
  dirs.push(dir);
  const clock = { t: 1_000_000 };
  const c = new MediaCache({ dir, maxTotalBytes: options.maxTotalBytes ?? 1_000_000, ttlMs: options.ttlMs ?? 60_000, now: () => clock.t });
  return { c, dir, clock };
}

async function* chunks(...parts: Buffer[]) {
  for (const p of parts) yield p;
}

describe('MediaCache', () => {
  it('keeps what was put, with its type and size, until the TTL passes; then the files go', async () => {
    const { c, dir, clock } = cache({ ttlMs: 60_000 });
    const put = await c.put('ws_a/msg_1', 'image/png', chunks(Buffer.from('abc'), Buffer.from('def')), 100);
    expect(put).toMatchObject({ mimeType: 'image/png', size: 6 });
    expect(readFileSync(put.path, 'utf8')).toBe('abcdef');
    clock.t += 59_000;
    expect(await c.get('ws_a/msg_1')).toMatchObject({ mimeType: 'image/png', size: 6 });
    expect(await c.get('ws_b/msg_1')).toBeNull();
    clock.t += 2_000;
    expect(await c.get('ws_a/msg_1')).toBeNull();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('over the size cap, the least recently used entries go first', async () => {
    const { c, clock } = cache({ maxTotalBytes: 250 });
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

  it('a body over the limit: 413 and no file left, not even a partial one', async () => {
    const { c, dir } = cache();
    await expect(c.put('a', 'x/y', chunks(Buffer.alloc(60), Buffer.alloc(60)), 100)).rejects.toMatchObject({ status: 413 });
    expect(readdirSync(dir)).toEqual([]);
    expect(await c.get('a')).toBeNull();
  });

  it('keys are digested: path separators and dots never reach the file system', async () => {
    const { c, dir } = cache();
    await c.put('../../etc/passwd', 'text/plain', chunks(Buffer.from('x')), 10);
    expect(readdirSync(dir).every((n) => /^[0-9a-f]{64}(\.json)?$/.test(n))).toBe(true);
  });
});
