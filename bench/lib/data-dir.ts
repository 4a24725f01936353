// A temporary DATA_DIR for a benchmark server, removed when the server exits: the embedded store
// leaves about 70 MB behind each run, which added up to gigabytes in the temporary directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function benchDataDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
