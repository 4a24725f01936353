// Copies a DATA_DIR's stored files into another storage (a bucket), verifying each by its
// digest: the bytes read from the source are hashed as they are written, then the copy is read
// back from the target and hashed again. An object already in the target with the same digest is
// left as it is, so a run cut off is simply run again. The media cache is not copied (a cache:
// the target fills its own).
import { createHash } from 'node:crypto';
import type { ObjectStorage } from './types.js';

/** What is copied: every area of stored files but the cache. */
export const MIGRATED_PREFIXES = ['documents/'];

export interface MigrateReport {
  copied: number;
  /** Already in the target with the same digest. */
  present: number;
  /** Read back with another digest (or not at all): the run fails. */
  failed: string[];
  bytes: number;
}

async function digestOf(storage: ObjectStorage, key: string): Promise<string | null> {
  const read = await storage.read(key);
  if (!read) return null;
  const hash = createHash('sha256');
  for await (const chunk of read.stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export async function migrateStorage(
  source: ObjectStorage,
  target: ObjectStorage,
  onProgress: (key: string, outcome: 'copied' | 'present' | 'failed') => void = () => {},
): Promise<MigrateReport> {
  const report: MigrateReport = { copied: 0, present: 0, failed: [], bytes: 0 };
  for (const prefix of MIGRATED_PREFIXES) {
    for await (const object of source.list(prefix)) {
      const key = object.key;
      const sourceDigest = await digestOf(source, key);
      if (sourceDigest === null) continue; // removed meanwhile
      const existing = await target.stat(key);
      if (existing && existing.size === object.size && (await digestOf(target, key)) === sourceDigest) {
        report.present++;
        onProgress(key, 'present');
        continue;
      }
      const info = await source.stat(key);
      const read = await source.read(key);
      if (!read || !info) continue;
      const written = await target.put(key, read.stream, { metadata: Object.keys(info.metadata).length ? info.metadata : undefined });
      const back = await digestOf(target, key);
      if (written.sha256 !== sourceDigest || back !== sourceDigest) {
        report.failed.push(key);
        onProgress(key, 'failed');
        continue;
      }
      report.copied++;
      report.bytes += written.size;
      onProgress(key, 'copied');
    }
  }
  return report;
}
