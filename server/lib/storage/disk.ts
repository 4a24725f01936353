// Files under a directory (DATA_DIR): an object is a file at its key's path, metadata a small
// JSON beside it. A write goes to a temporary name and is renamed into place, so a reader never
// sees a partial file and a failed write leaves none behind.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { access, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile, constants } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  checkKey,
  META_SUFFIX,
  type ByteRange,
  type ListedObject,
  type ObjectInfo,
  type ObjectRead,
  type ObjectStorage,
  type PutOptions,
  type PutResult,
} from './types.js';

/** Temporary files start with this; one older than STALE_MS was left by a crash. */
const PART_PREFIX = '.part-';
const STALE_MS = 60 * 60 * 1000;

export class DiskStorage implements ObjectStorage {
  readonly kind = 'disk' as const;

  constructor(readonly location: string) {}

  private path(key: string): string {
    return join(this.location, ...checkKey(key).split('/'));
  }

  async put(key: string, body: Buffer | AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<PutResult> {
    const path = this.path(key);
    const dir = dirname(path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const part = join(dir, `${PART_PREFIX}${randomBytes(8).toString('hex')}`);
    const digest = createHash('sha256');
    let size = 0;
    const { maxBytes, tooLarge } = options;
    try {
      await pipeline(
        Readable.from(Buffer.isBuffer(body) ? [body] : body),
        async function* (chunks: AsyncIterable<Uint8Array>) {
          for await (const chunk of chunks) {
            size += chunk.byteLength;
            if (maxBytes !== undefined && size > maxBytes) throw tooLarge?.() ?? new Error('object too large');
            digest.update(chunk);
            yield chunk;
          }
        },
        createWriteStream(part, { flags: 'wx', mode: 0o600 }),
      );
      if (options.metadata || options.contentType) {
        const meta = { ...options.metadata, ...(options.contentType ? { 'content-type': options.contentType } : {}) };
        await writeFile(`${part}${META_SUFFIX}`, JSON.stringify(meta), { mode: 0o600 });
        await rename(`${part}${META_SUFFIX}`, `${path}${META_SUFFIX}`);
      } else {
        await rm(`${path}${META_SUFFIX}`, { force: true });
      }
      await rename(part, path);
    } catch (error) {
      await rm(part, { force: true });
      await rm(`${part}${META_SUFFIX}`, { force: true });
      throw error;
    }
    return { size, sha256: digest.digest('hex') };
  }

  async read(key: string, range?: ByteRange): Promise<ObjectRead | null> {
    const path = this.path(key);
    try {
      const { size } = await stat(path);
      // Opened before answering, so a file removed meanwhile is `null`, not a broken stream.
      const stream = createReadStream(path, range ? { start: range.start, end: range.end } : {});
      await new Promise<void>((resolve, reject) => {
        stream.once('open', () => resolve());
        stream.once('error', reject);
      });
      return { stream, size };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const path = this.path(key);
    try {
      const s = await stat(path);
      const metadata = await readFile(`${path}${META_SUFFIX}`, 'utf8').then(
        (text) => JSON.parse(text) as Record<string, string>,
        () => ({}),
      );
      return { size: s.size, modified: s.mtime, metadata };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async touch(key: string, at: Date): Promise<void> {
    await utimes(this.path(key), at, at).catch(() => undefined);
  }

  async remove(key: string): Promise<void> {
    const path = this.path(key);
    await rm(`${path}${META_SUFFIX}`, { force: true });
    await rm(path, { force: true });
  }

  async *list(prefix: string): AsyncIterable<ListedObject> {
    const root = join(this.location, ...prefix.split('/').filter(Boolean));
    yield* this.walk(root);
  }

  private async *walk(dir: string): AsyncIterable<ListedObject> {
    const entries = await readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        yield* this.walk(path);
        continue;
      }
      if (!entry.isFile() || entry.name.endsWith(META_SUFFIX)) continue;
      const s = await stat(path).catch(() => null);
      if (!s) continue;
      if (entry.name.startsWith(PART_PREFIX) || entry.name.startsWith('.')) {
        // A write cut off by a crash: nobody will rename it any more.
        if (Date.now() - s.mtimeMs > STALE_MS) await rm(path, { force: true });
        continue;
      }
      yield { key: relative(this.location, path).split(sep).join('/'), size: s.size, modified: s.mtime };
    }
  }

  async ping(): Promise<void> {
    await mkdir(this.location, { recursive: true });
    await access(this.location, constants.W_OK);
  }

  async close(): Promise<void> {}
}
