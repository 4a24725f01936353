// Document files in the platform's storage (server/lib/storage/: DATA_DIR/documents/ or the
// bucket's documents/), each under a generated name (32 base62 characters), never the client's.
// The object is written first and the row committed after it: a row never names a missing file.
// A failed commit removes its object at once; one left by a crash mid-upload, or by a delete whose
// removal failed, is found by the sweep below (an object no live row names, older than an hour).
import type { Readable } from 'node:stream';
import { base62 } from '#server/lib/ids.js';
import type { ObjectStorage } from '#server/lib/storage/index.js';
import type { Platform } from '#server/platform.js';

const KEY = /^[0-9A-Za-z]{32}$/;
const PREFIX = 'documents/';

function objectKey(key: string): string {
  // The key comes from our own database, but an object name is built from it: check its shape anyway.
  if (!KEY.test(key)) throw new Error('invalid storage key');
  return `${PREFIX}${key}`;
}

/** The storage key of a document file (for sendStored). */
export const documentObject = objectKey;

/** Writes the bytes under a new generated name and answers that name. */
export async function storeFile(storage: ObjectStorage, bytes: Buffer, contentType?: string): Promise<string> {
  const key = base62(32);
  await storage.put(objectKey(key), bytes, { contentType });
  return key;
}

export async function removeFile(storage: ObjectStorage, key: string): Promise<void> {
  await storage.remove(objectKey(key));
}

/** A read stream of the stored file and its size, or null when it is gone. */
export async function openFile(storage: ObjectStorage, key: string): Promise<{ stream: Readable; size: number } | null> {
  return storage.read(objectKey(key));
}

/** An object younger than this may belong to an upload whose row is not committed yet. */
export const ORPHAN_AFTER_MS = 60 * 60 * 1000;
const BATCH = 500;

export interface SweepResult {
  /** Objects no live document names (a crash between object and row, a delete whose removal failed): removed. */
  orphanObjects: number;
  /** Rows of live documents whose object is gone (written elsewhere, deleted by hand): logged, kept. */
  missingObjects: number;
}

/**
 * Both sides of "no row without its object, no object without its row". Safe on every instance
 * at once: removing an object twice is fine, and a young object is left alone.
 */
export async function sweepDocumentFiles(platform: Platform, now = platform.now()): Promise<SweepResult> {
  const { storage, store } = platform;
  const result: SweepResult = { orphanObjects: 0, missingObjects: 0 };
  const live = async (keys: string[]) =>
    new Set(
      (
        await store.db
          .selectFrom('document_versions as v')
          .innerJoin('documents as d', 'd.id', 'v.document_id')
          .select('v.storage_key')
          .where('v.storage_key', 'in', keys)
          .where('d.deleted_at', 'is', null)
          .execute()
      ).map((r) => r.storage_key),
    );
  let batch: string[] = [];
  const flush = async () => {
    if (!batch.length) return;
    const named = await live(batch);
    for (const key of batch) {
      if (named.has(key)) continue;
      await storage.remove(objectKey(key));
      result.orphanObjects++;
    }
    batch = [];
  };
  const seen = new Set<string>();
  for await (const object of storage.list(PREFIX)) {
    const key = object.key.slice(PREFIX.length);
    if (!KEY.test(key)) continue;
    seen.add(key);
    if (now.getTime() - object.modified.getTime() < ORPHAN_AFTER_MS) continue;
    batch.push(key);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  // The other side: live rows older than the orphan age whose object the listing did not show.
  const cutoff = new Date(now.getTime() - ORPHAN_AFTER_MS);
  let after = '';
  for (;;) {
    const rows = await store.db
      .selectFrom('document_versions as v')
      .innerJoin('documents as d', 'd.id', 'v.document_id')
      .select(['v.storage_key', 'v.document_id', 'v.version'])
      .where('d.deleted_at', 'is', null)
      .where('v.created_at', '<', cutoff)
      .where('v.storage_key', '>', after)
      .orderBy('v.storage_key')
      .limit(BATCH)
      .execute();
    for (const row of rows) if (!seen.has(row.storage_key)) result.missingObjects++;
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.storage_key;
  }
  return result;
}
