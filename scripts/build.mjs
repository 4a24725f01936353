// `npm run build`: compiles server/ into dist/ (tsconfig.build.json), then copies what the server
// reads at run time relative to its own modules, so that dist/ keeps the repository's layout:
// every file under server/ that is not TypeScript (browser scripts and styles, pack data) to the
// same path under dist/server/, and the documents of generated/ and the guides of docs/ that
// server/contract.ts and server/site/docs-catalogue.ts find from `import.meta.url`.
// `--if-changed` (npm's prestart) skips tsc when no TypeScript source under server/ and neither
// tsconfig is newer than the start of the last build that succeeded (dist/.build-stamp): with
// isolatedModules each output depends on its own source and the options alone, and typechecking
// is `npm test`'s job, so `npm start` on an unchanged tree starts at once, writing nothing.
// Otherwise tsc runs, and it is incremental (dist/.tsbuildinfo).
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const typescript = /\.[cm]?tsx?$/;

const stamp = join(dist, '.build-stamp');
const started = new Date();

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

function sourcesChanged() {
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const inputs = [join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'), ...[...files(join(root, 'server'))].filter((f) => typescript.test(f))];
  return inputs.some((file) => statSync(file).mtimeMs > built);
}

const compile = !process.argv.includes('--if-changed') || sourcesChanged();
if (compile) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (compiled.status !== 0) process.exit(compiled.status ?? 1);
}

let copied = 0;
// The README too: the docs pages serve it beside docs/ (server/site/docs-catalogue.ts).
for (const folder of ['server', 'generated', 'docs', 'README.md']) {
  if (!existsSync(join(root, folder))) continue;
  for (const file of statSync(join(root, folder)).isFile() ? [join(root, folder)] : files(join(root, folder))) {
    if (typescript.test(file)) continue;
    const path = relative(root, file);
    // A browser script beside a module of the same name would overwrite its compiled output.
    if (path.endsWith('.js') && existsSync(join(root, path.replace(/\.js$/, '.ts')))) {
      console.error(`${path}: a .ts file of the same name compiles to this path in dist/`);
      process.exit(1);
    }
    const target = join(dist, path);
    if (existsSync(target) && statSync(target).mtimeMs >= statSync(file).mtimeMs && statSync(target).size === statSync(file).size) continue;
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(file, target);
    copied++;
  }
}
// The compiled modules import `#server/…` and `#generated/…` as the sources do; from dist/ the
// nearest package.json is this one, which maps them inside dist/.
// Written only when it differs, and the stamp only after tsc ran: `npm start` on an unchanged
// build writes nothing, so a user who may read the install folder but not write it can start it.
const manifest = `${JSON.stringify({ type: 'module', private: true, imports: { '#server/*': './server/*', '#generated/*': './generated/*' } }, null, 2)}\n`;
const manifestPath = join(dist, 'package.json');
if (!existsSync(manifestPath) || readFileSync(manifestPath, 'utf8') !== manifest) writeFileSync(manifestPath, manifest);
if (compile) {
  // Stamped with the time the build started, so that a source saved while tsc ran counts as changed.
  closeSync(openSync(stamp, 'a'));
  utimesSync(stamp, started, started);
}
if (copied) console.log(`dist/: copied ${copied} files beside the compiled server/`);
