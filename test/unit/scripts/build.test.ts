// scripts/build.mjs --if-changed (npm's prestart) on a build that is up to date writes nothing:
// `npm start` by a user who may read the install folder but not write it starts rather than
// failing with EACCES on dist/package.json or the build stamp. Run on a small copy of the layout
// (one module, one asset), then again with the folder read-only: as another user when the tests
// run as root (whom file modes do not stop), else with the write bits removed.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function chmodTree(path: string, mode: (isDir: boolean) => number) {
  const stat = statSync(path);
  chmodSync(path, mode(stat.isDirectory()));
  if (stat.isDirectory()) for (const name of readdirSync(path)) if (name !== 'node_modules') chmodTree(join(path, name), mode);
}

describe('npm start on an unchanged build', () => {
  const root = mkdtempSync(join(tmpdir(), 'build-'));
  afterAll(() => {
    chmodTree(root, (dir) => (dir ? 0o755 : 0o644));
    rmSync(root, { recursive: true, force: true });
  });

  it('writes nothing, so a user who cannot write the install folder starts it', () => {
    for (const dir of ['scripts', 'server/assets', 'generated', 'docs']) mkdirSync(join(root, dir), { recursive: true });
    copyFileSync(join(REPO, 'scripts/build.mjs'), join(root, 'scripts/build.mjs'));
    copyFileSync(join(REPO, 'tsconfig.build.json'), join(root, 'tsconfig.build.json'));
    writeFileSync(
      join(root, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', isolatedModules: true, noEmit: true, skipLibCheck: true },
      }),
    );
    writeFileSync(join(root, 'server/main.ts'), 'export const answer: number = 42;\n');
    writeFileSync(join(root, 'server/assets/page.css'), 'body{margin:0}\n');
    symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'));
    const build = (as?: number) =>
      spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), '--if-changed'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
        ...(as === undefined ? {} : { uid: as, gid: as }),
      });

    const first = build();
    expect(first.status, first.stderr).toBe(0);
    const dist = join(root, 'dist');
    expect(statSync(join(dist, 'server/main.js')).isFile()).toBe(true);
    expect(statSync(join(dist, 'server/assets/page.css')).isFile()).toBe(true);
    const written = (name: string) => statSync(join(dist, name)).mtimeMs;
    const before = { manifest: written('package.json'), stamp: written('.build-stamp') };

    chmodTree(root, (dir) => (dir ? 0o555 : 0o444));
    const asRoot = process.getuid?.() === 0;
    const again = build(asRoot ? 65534 : undefined); // nobody
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
    expect({ manifest: written('package.json'), stamp: written('.build-stamp') }).toEqual(before);
  }, 90_000);
});
