// Inbound media downloaded from the provider, kept in DATA_DIR/media-cache so a file read twice
// is fetched once: a file per entry with a small JSON beside it (type, size, when fetched). A file
// is written under a temporary name while it arrives, counted against the download limit, and
// renamed when complete, so a reader never sees half a file. Entries expire after the TTL; after
// each write the least recently used go until the cache fits its size cap. The cache belongs to
// one instance (its DATA_DIR); another instance simply fetches again.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { mediaTooLarge } from '#server/providers/types.js';

export interface CachedMedia {
  path: string;
  mimeType: string;
  size: number;
}

export interface MediaCacheOptions {
  dir: string;
  /** The cache's total size. */
  maxTotalBytes: number;
  ttlMs: number;
  now?: () => number;
}

/** A temporary file older than this was left by a crash, not by a download under way. */
const STALE_PART_MS = 60 * 60 * 1000;

export class MediaCache {
  private readonly now: () => number;
  private ready?: Promise<unknown>;

  constructor(private readonly options: MediaCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Entries are named by a digest of the owner's key: no caller-given text reaches a path. */
  private paths(key: string) {
    const name = createHash('sha256').update(key).digest('hex');
    return { data: join(this.options.dir, name), meta: join(this.options.dir, `${name}.json`) };
  }

  async get(key: string): Promise<CachedMedia | null> {
    const { data, meta } = this.paths(key);
    try {
      const info = JSON.parse(await readFile(meta, 'utf8')) as { mimeType: string; size: number; at: number };
      if (this.now() - info.at > this.options.ttlMs) {
        await this.remove(key);
        return null;
      }
      const s = await stat(data);
      if (s.size !== info.size) return null;
      // The access time decides what goes first when the cache is full.
      const at = new Date(this.now());
      await utimes(meta, at, at).catch(() => undefined);
      return { path: data, mimeType: info.mimeType, size: info.size };
    } catch {
      return null;
    }
  }

  /** Writes `body` as the entry of `key`; more than `maxBytes` stops the write with 413 and leaves nothing. */
  async put(key: string, mimeType: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<CachedMedia> {
    this.ready ??= mkdir(this.options.dir, { recursive: true });
    await this.ready;
    const { data, meta } = this.paths(key);
    const part = `${data}.${randomBytes(6).toString('hex')}.part`;
    let size = 0;
    try {
      await pipeline(
        body,
        async function* (chunks: AsyncIterable<Uint8Array>) {
          for await (const chunk of chunks) {
            size += chunk.byteLength;
            if (size > maxBytes) throw mediaTooLarge(maxBytes);
            yield chunk;
          }
        },
        createWriteStream(part, { flags: 'wx' }),
      );
      await rename(part, data);
      await writeFile(`${meta}.part`, JSON.stringify({ mimeType, size, at: this.now() }));
      await rename(`${meta}.part`, meta);
      const at = new Date(this.now());
      await utimes(meta, at, at);
    } catch (error) {
      await rm(part, { force: true });
      throw error;
    }
    await this.prune().catch(() => undefined);
    return { path: data, mimeType, size };
  }

  async remove(key: string): Promise<void> {
    const { data, meta } = this.paths(key);
    await rm(meta, { force: true });
    await rm(data, { force: true });
  }

  /** Drops expired entries and stale temporary files, then the least recently used until the cache fits. */
  async prune(): Promise<void> {
    const names = await readdir(this.options.dir);
    const now = this.now();
    const entries: { name: string; size: number; usedAt: number }[] = [];
    for (const name of names) {
      const path = join(this.options.dir, name);
      const s = await stat(path).catch(() => null);
      if (!s) continue;
      if (name.endsWith('.part')) {
        if (now - s.mtimeMs > STALE_PART_MS) await rm(path, { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const data = path.slice(0, -'.json'.length);
      const info = await readFile(path, 'utf8')
        .then((t) => JSON.parse(t) as { size: number; at: number })
        .catch(() => null);
      if (!info || now - info.at > this.options.ttlMs) {
        await rm(path, { force: true });
        await rm(data, { force: true });
        continue;
      }
      entries.push({ name: data, size: info.size, usedAt: s.mtimeMs });
    }
    let total = entries.reduce((n, e) => n + e.size, 0);
    for (const e of entries.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.options.maxTotalBytes) break;
      await rm(`${e.name}.json`, { force: true });
      await rm(e.name, { force: true });
      total -= e.size;
    }
  }
}
