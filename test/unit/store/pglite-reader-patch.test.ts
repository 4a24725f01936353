// patches/@electric-sql+pglite+0.5.16.patch (patch-package, npm's postinstall; docs/dependencies.md):
// PGlite's protocol reader decodes text fields from a view of the message buffer instead of a copy
// of each. The patch changes that one method in each build of the reader and nothing else, the
// installed package carries it, and every kind of text reads back as written, fields of many rows
// in one message included.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGliteStatements } from '#server/store/pglite-statements.js';

const installed = fileURLToPath(new URL('../../../node_modules/@electric-sql/pglite/', import.meta.url));
const patch = readFileSync(new URL('../../../patches/@electric-sql+pglite+0.5.16.patch', import.meta.url), 'utf8');
const FILES = ['dist/chunk-Y6PULSM7.js', 'dist/index.cjs', 'dist/node-postgres/index.cjs'];
// The reader's string() as published (decodes a copy made by bytes()) and as patched (decodes a
// view, then moves the offset as bytes() did), with each build's minified names.
const PUBLISHED = /string\(t\)\{return (\w)\(this,(\w+)\)\.decode\(this\.bytes\(t\)\)\}/;
const PATCHED =
  /string\(t\)\{let (\w)=(\w)\(this,(\w+)\)\.decode\(new Uint8Array\(\2\(this,\w+\)\.buffer,\2\(this,(\w+)\),t\)\);return \w\(this,\4,\2\(this,\4\)\+t\),\1\}/;

describe('PGlite reader patch', () => {
  it('changes string() in the three builds of the reader and nothing else', () => {
    expect([...patch.matchAll(/^\+\+\+ b\/node_modules\/@electric-sql\/pglite\/(.+)$/gm)].map((m) => m[1])).toEqual(FILES);
    const removed = [...patch.matchAll(/^-(?!--)(.*)$/gm)].map((m) => m[1]!);
    const added = [...patch.matchAll(/^\+(?!\+\+)(.*)$/gm)].map((m) => m[1]!);
    expect([removed.length, added.length]).toEqual([3, 3]);
    for (const [i, before] of removed.entries()) {
      const after = added[i]!;
      expect(before.match(new RegExp(PUBLISHED, 'g'))).toHaveLength(1);
      expect(after.match(new RegExp(PATCHED, 'g'))).toHaveLength(1);
      expect(after.replace(PATCHED, 'string()')).toBe(before.replace(PUBLISHED, 'string()'));
    }
  });

  it('is applied to the installed package (npm install runs patch-package)', () => {
    const added = [...patch.matchAll(/^\+(?!\+\+)(.*)$/gm)].map((m) => m[1]!);
    for (const [i, file] of FILES.entries()) {
      const text = readFileSync(join(installed, file), 'utf8');
      expect(text.split('\n')).toContain(added[i]);
      expect(text).not.toMatch(PUBLISHED);
    }
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
