// Temporary files of a benchmark server, removed when the server exits: the embedded store
// leaves about 70 MB behind each run, which added up to gigabytes in the temporary directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `path` (a file or a directory), removed when this process exits. */
export function removedOnExit(path: string): string {
  process.once('exit', () => rmSync(path, { recursive: true, force: true }));
  return path;
}

export function benchDataDir(prefix: string): string {
  return removedOnExit(mkdtempSync(join(tmpdir(), prefix)));
}
