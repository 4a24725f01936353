// Inbound media downloaded from the provider, kept in the platform's storage (server/lib/storage/:
// DATA_DIR/media-cache, or the bucket's media-cache/ that every instance shares) so a file read
// twice is fetched once: an object per entry with its type and fetch time as metadata. An entry is
// written whole or not at all, counted against the download limit as it arrives. Entries expire
// after the TTL; after each write the least recently used go until the cache fits its size cap
// (on S3, "used" is the object's LastModified, renewed by a read at most once per TOUCH_EVERY_MS).
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { ObjectStorage } from '#server/lib/storage/index.js';
import { mediaTooLarge } from '#server/providers/types.js';

export interface CachedMedia {
  /** The entry's storage key (for sendStored). */
  key: string;
  mimeType: string;
  size: number;
}

export interface MediaCacheOptions {
  storage: ObjectStorage;
  /** The cache's total size. */
  maxTotalBytes: number;
  ttlMs: number;
  now?: () => number;
}

const PREFIX = 'media-cache/';
/** A read marks the entry used at most this often (on S3 a mark is a copy request). */
const TOUCH_EVERY_MS = 60_000;

export class MediaCache {
  private readonly now: () => number;
  private pruning?: Promise<void>;

  constructor(private readonly options: MediaCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Entries are named by a digest of the owner's key: no caller-given text reaches a name. */
  private name(key: string): string {
    return PREFIX + createHash('sha256').update(key).digest('hex');
  }

  async get(key: string): Promise<CachedMedia | null> {
    const name = this.name(key);
    const info = await this.options.storage.stat(name).catch(() => null);
    if (!info) return null;
    const at = Number(info.metadata['fetched-at']);
    const mimeType = info.metadata['mime-type'];
    if (!mimeType || !Number.isFinite(at) || this.now() - at > this.options.ttlMs) {
      await this.options.storage.remove(name).catch(() => undefined);
      return null;
    }
    // The use decides what goes first when the cache is full.
    if (this.now() - info.modified.getTime() > TOUCH_EVERY_MS || this.options.storage.kind === 'disk') {
      await this.options.storage.touch(name, new Date(this.now())).catch(() => undefined);
    }
    return { key: name, mimeType, size: info.size };
  }

  /** A stream of an entry `get` answered (null if it went meanwhile). */
  async open(entry: CachedMedia): Promise<Readable | null> {
    return (await this.options.storage.read(entry.key))?.stream ?? null;
  }

  get storage(): ObjectStorage {
    return this.options.storage;
  }

  /** Writes `body` as the entry of `key`; more than `maxBytes` stops the write with 413 and leaves nothing. */
  async put(key: string, mimeType: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<CachedMedia> {
    const name = this.name(key);
    const at = this.now();
    const { size } = await this.options.storage.put(name, body, {
      contentType: mimeType,
      metadata: { 'mime-type': mimeType, 'fetched-at': String(at) },
      maxBytes,
      tooLarge: () => mediaTooLarge(maxBytes),
    });
    await this.options.storage.touch(name, new Date(at)).catch(() => undefined);
    // One prune at a time per instance; a write meanwhile is counted by the next one.
    this.pruning ??= this.prune(name)
      .catch(() => undefined)
      .finally(() => (this.pruning = undefined));
    await this.pruning;
    return { key: name, mimeType, size };
  }

  async remove(key: string): Promise<void> {
    await this.options.storage.remove(this.name(key));
  }

  /** Drops expired entries, then the least recently used until the cache fits (never `keep`, the entry just written). */
  async prune(keep?: string): Promise<void> {
    const now = this.now();
    const entries: { key: string; size: number; usedAt: number }[] = [];
    for await (const object of this.options.storage.list(PREFIX)) {
      // Unused for a whole TTL: expired whenever it was fetched.
      if (now - object.modified.getTime() > this.options.ttlMs) {
        await this.options.storage.remove(object.key);
        continue;
      }
      entries.push({ key: object.key, size: object.size, usedAt: object.modified.getTime() });
    }
    let total = entries.reduce((n, e) => n + e.size, 0);
    for (const e of entries.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.options.maxTotalBytes) break;
      if (e.key === keep) continue;
      await this.options.storage.remove(e.key);
      total -= e.size;
    }
  }
}
