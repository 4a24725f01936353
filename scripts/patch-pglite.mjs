// npm's postinstall: one fix to PGlite 0.5.16's protocol reader, applied to the installed files.
//
// Its BufferReader.string(n) decodes `this.bytes(n)`, and bytes() copies the field into a new
// ArrayBuffer (`buffer.slice`) before TextDecoder reads it: one ArrayBuffer allocated for every
// text field of every row. On a page of 20 contacts that was the largest single cost of the
// request (~90 µs of ~1 ms). string() now decodes a view of the message buffer instead; decode()
// copies into a JS string at once, so no view outlives the call. bytes() itself is unchanged (its
// callers may keep what it returns). Same strings, same offsets: the whole test suite runs on it.
//
// Idempotent, and refuses loudly when a file does not hold exactly the code it expects (another
// PGlite version): then this script needs updating along with the pin in package.json.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = '0.5.16';
// Each file holds one copy of the reader, minified with its own names for the decoder, the
// DataView and the offset fields and for the private-field getter/setter.
const FIXES = [
  {
    file: 'dist/chunk-Y6PULSM7.js',
    from: 'string(t){return r(this,le).decode(this.bytes(t))}',
    to: 'string(t){let n=r(this,le).decode(new Uint8Array(r(this,x).buffer,r(this,w),t));return d(this,w,r(this,w)+t),n}',
  },
  {
    file: 'dist/index.cjs',
    from: 'string(t){return c(this,vr).decode(this.bytes(t))}',
    to: 'string(t){let r=c(this,vr).decode(new Uint8Array(c(this,he).buffer,c(this,j),t));return y(this,j,c(this,j)+t),r}',
  },
  {
    file: 'dist/node-postgres/index.cjs',
    from: 'string(t){return c(this,Sr).decode(this.bytes(t))}',
    to: 'string(t){let r=c(this,Sr).decode(new Uint8Array(c(this,Se).buffer,c(this,j),t));return y(this,j,c(this,j)+t),r}',
  },
];

const count = (text, part) => text.split(part).length - 1;

/** Applies the fixes under `root` (the package's folder); returns how many files it changed. */
export function patchPGlite(root) {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (version !== VERSION) throw new Error(`scripts/patch-pglite.mjs is for @electric-sql/pglite ${VERSION}, found ${version}`);
  let changed = 0;
  for (const { file, from, to } of FIXES) {
    const path = join(root, file);
    const text = readFileSync(path, 'utf8');
    if (count(text, to) === 1 && count(text, from) === 0) continue;
    if (count(text, from) !== 1) throw new Error(`${path}: the reader's string() is not the expected code`);
    writeFileSync(path, text.replace(from, to));
    changed++;
  }
  return changed;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL('../node_modules/@electric-sql/pglite/', import.meta.url));
  const changed = patchPGlite(root);
  if (changed) console.log(`patched @electric-sql/pglite's protocol reader (${changed} files)`);
}
