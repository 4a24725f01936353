// The migrated template every test store starts from (test/support/store.ts) is named by the
// hash of what a migrated database depends on: a changed, added or renamed migration, or a
// changed runner, names another template, so a stale one is never loaded.
import { appendFileSync, cpSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { templateHash } from '#test/support/store.js';

const root = new URL('../../../', import.meta.url).pathname;
const trees: string[] = [];
afterEach(() => {
  for (const tree of trees.splice(0)) rmSync(tree, { recursive: true, force: true });
});

/** A copy of the store's migrations and runner, as a tree of its own. */
function copy(): string {
  const tree = mkdtempSync(join(tmpdir(), 'template-hash-'));
  trees.push(tree);
  cpSync(join(root, 'server/store/migrations'), join(tree, 'server/store/migrations'), { recursive: true });
  cpSync(join(root, 'server/store/migrate.ts'), join(tree, 'server/store/migrate.ts'));
  return tree;
}

it('an unchanged copy of the migrations names the same template', () => {
  expect(templateHash(copy())).toBe(templateHash());
});

it('a changed, added or renamed migration, or a changed runner, names another template', () => {
  const base = templateHash();
  const changed = copy();
  appendFileSync(join(changed, 'server/store/migrations/001_platform.ts'), '\n// changed\n');
  const added = copy();
  writeFileSync(join(added, 'server/store/migrations/999_more.ts'), 'export async function up() {}\n');
  const renamed = copy();
  renameSync(join(renamed, 'server/store/migrations/001_platform.ts'), join(renamed, 'server/store/migrations/001_platforms.ts'));
  const runner = copy();
  appendFileSync(join(runner, 'server/store/migrate.ts'), '\n// changed\n');
  const hashes = [base, ...[changed, added, renamed, runner].map((tree) => templateHash(tree))];
  expect(new Set(hashes).size).toBe(hashes.length);
});
