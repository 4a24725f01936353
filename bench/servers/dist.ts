// The benchmark servers run the compiled server (dist/, built by `npm run build`), which is what
// `npm start` and a deployment run, not the TypeScript sources through tsx: tsx's output differs
// (every named function is wrapped for its name, closures made per request included), and the
// figures are about the server people run. Both the subject and the bare baseline use it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ownRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Builds dist/ of `root` (this checkout, or another one's for bench:ab) when a source changed (`npm run build -- --if-changed`). */
export function buildDist(root = ownRoot): void {
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) throw new Error(`npm run build failed in ${root}`);
}

/** A module of the compiled server, e.g. `fromDist<typeof import('#server/app.js')>('server/app.js')`. */
export function fromDist<T>(path: string): Promise<T> {
  return import(new URL(`../../dist/${path}`, import.meta.url).href) as Promise<T>;
}
