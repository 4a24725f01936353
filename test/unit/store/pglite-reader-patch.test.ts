// scripts/patch-pglite.mjs (npm's postinstall): PGlite's protocol reader decodes text fields from
// a view of the message buffer instead of a copy of each. The installed package carries the fix,
// the script is idempotent and refuses code it does not know, and every kind of text reads back
// as written, fields of many rows in one message included.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patchPGlite } from '../../../scripts/patch-pglite.mjs';
import { PGliteStatements } from '../../../server/store/pglite-statements.js';

const installed = fileURLToPath(new URL('../../../node_modules/@electric-sql/pglite/', import.meta.url));
const FILES = ['dist/chunk-Y6PULSM7.js', 'dist/index.cjs', 'dist/node-postgres/index.cjs'];

/** A copy of the installed package's files that the script touches, with the original reader put back. */
function unpatchedCopy(): string {
  const root = mkdtempSync(join(tmpdir(), 'pglite-patch-'));
  cpSync(join(installed, 'package.json'), join(root, 'package.json'));
  for (const file of FILES) {
    const text = readFileSync(join(installed, file), 'utf8').replace(
      /string\(t\)\{let (\w)=(\w)\(this,(\w+)\)\.decode\(new Uint8Array\(\2\(this,\w+\)\.buffer,\2\(this,\w+\),t\)\);return \w\(this,\w+,\2\(this,\w+\)\+t\),\1\}/,
      (_m, _v, get, decoder) => `string(t){return ${get}(this,${decoder}).decode(this.bytes(t))}`,
    );
    cpSync(join(installed, file), join(root, file));
    writeFileSync(join(root, file), text);
  }
  return root;
}

describe('PGlite reader patch', () => {
  it('is applied to the installed package (npm install runs it)', () => {
    expect(patchPGlite(installed)).toBe(0);
    for (const file of FILES) expect(readFileSync(join(installed, file), 'utf8')).toContain('decode(new Uint8Array(');
  });

  it('patches each file once, then changes nothing; refuses another version or unknown code', () => {
    const root = unpatchedCopy();
    for (const file of FILES) expect(readFileSync(join(root, file), 'utf8')).toContain('.decode(this.bytes(t))}');
    expect(patchPGlite(root)).toBe(3);
    const once = FILES.map((file) => readFileSync(join(root, file), 'utf8'));
    expect(patchPGlite(root)).toBe(0);
    expect(FILES.map((file) => readFileSync(join(root, file), 'utf8'))).toEqual(once);
    for (const [i, file] of FILES.entries()) expect(once[i]).toBe(readFileSync(join(installed, file), 'utf8'));

    writeFileSync(join(root, FILES[0]!), 'export {}');
    expect(() => patchPGlite(root)).toThrow(/not the expected code/);
    writeFileSync(join(root, 'package.json'), JSON.stringify({ version: '0.6.0' }));
    expect(() => patchPGlite(root)).toThrow(/is for @electric-sql\/pglite 0\.5\.16, found 0\.6\.0/);
  });

  describe('reads text back as written', () => {
    let pg: PGlite;
    beforeAll(async () => {
      pg = await PGlite.create();
      await pg.exec('create table t (i int primary key, s text, j jsonb, a text[])');
    }, 60_000);
    afterAll(async () => pg?.close());

    it('ASCII, multi-byte UTF-8, empty strings, NULLs, JSON and arrays, over many rows of one answer', async () => {
      const texts = ['', 'plain', 'Grüße, Straße', '日本語のテキスト', '🙂👍🏽 emoji', 'ע"ב RTL \u200f', 'x'.repeat(70_000), null];
      const statements = new PGliteStatements(pg);
      for (let i = 0; i < 200; i++) {
        const s = texts[i % texts.length]!;
        await statements.query('insert into t values ($1, $2, $3, $4)', [i, s, s === null ? null : JSON.stringify({ s, i }), s === null ? null : [s, `${i}`]]);
      }
      const ours = await statements.query<{ i: number; s: string | null; j: unknown; a: string[] | null }>('select * from t order by i', []);
      expect(ours.rows).toHaveLength(200);
      ours.rows.forEach((row, i) => {
        const s = texts[i % texts.length]!;
        expect(row).toEqual({ i, s, j: s === null ? null : { s, i }, a: s === null ? null : [s, `${i}`] });
      });
      expect(ours.fields.map((f) => f.name)).toEqual(['i', 's', 'j', 'a']);
      expect((await pg.query('select * from t order by i')).rows).toEqual(ours.rows);
    });
  });
});
