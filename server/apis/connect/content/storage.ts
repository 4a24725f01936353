// Document files under DATA_DIR/documents/, each under a generated name (32 base62 characters),
// never the client's. A file is written to a temporary name and renamed into place, so a reader
// never sees a partial file and a failed upload leaves none behind.
import { createReadStream, type ReadStream } from 'node:fs';
import { mkdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { base62 } from '#server/lib/ids.js';

const KEY = /^[0-9A-Za-z]{32}$/;

export function documentsDir(dataDir: string): string {
  return join(dataDir, 'documents');
}

function pathOf(dataDir: string, key: string): string {
  // The key comes from our own database, but a path is built from it: check its shape anyway.
  if (!KEY.test(key)) throw new Error('invalid storage key');
  return join(documentsDir(dataDir), key);
}

/** Writes the bytes under a new generated name and answers that name. */
export async function storeFile(dataDir: string, bytes: Buffer): Promise<string> {
  const dir = documentsDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const key = base62(32);
  const temporary = join(dir, `.upload-${base62(16)}`);
  try {
    await writeFile(temporary, bytes, { mode: 0o600, flag: 'wx' });
    await rename(temporary, pathOf(dataDir, key));
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  return key;
}

export async function removeFile(dataDir: string, key: string): Promise<void> {
  await unlink(pathOf(dataDir, key)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/** A read stream of the stored file and its size, or null when it is gone. */
export async function openFile(dataDir: string, key: string): Promise<{ stream: ReadStream; size: number } | null> {
  const path = pathOf(dataDir, key);
  try {
    const { size } = await stat(path);
    return { stream: createReadStream(path), size };
  } catch {
    return null;
  }
}
