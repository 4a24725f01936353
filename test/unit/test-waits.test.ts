// Tests wait in two ways only (test/support/eventually.ts): `eventually` for something to happen,
// woken by the app's events, and `elapse` for real time that must pass, with its reason. A bare
// sleep elsewhere in test/ is an unexplained wait on the wall clock.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const ALLOWED = new Set(['test/support/eventually.ts', 'test/unit/test-waits.test.ts']);
/** `await new Promise((r) => setTimeout(r, …))`, and helpers defined as one. */
const SLEEP = [/await new Promise(?:<\w+>)?\(\(?(\w+)\)? => setTimeout\(\1\b/, /=> new Promise(?:<\w+>)?\(\(?(\w+)\)? => setTimeout\(\1, \w+\)\);?$/];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

it('no test sleeps on the wall clock outside test/support/eventually.ts', () => {
  const found = files(join(root, 'test'))
    .map((path) => relative(root, path))
    .filter((path) => !ALLOWED.has(path))
    .flatMap((path) =>
      readFileSync(join(root, path), 'utf8')
        .split('\n')
        .flatMap((line, i) => (SLEEP.some((re) => re.test(line.trim())) ? [`${path}:${i + 1}`] : [])),
    );
  expect(found).toEqual([]);
});

it('the check finds the sleeps it forbids', () => {
  expect(SLEEP.some((re) => re.test('await new Promise((r) => setTimeout(r, 100));'))).toBe(true);
  expect(SLEEP.some((re) => re.test('await new Promise((resolve) => setTimeout(resolve, 25));'))).toBe(true);
  expect(SLEEP.some((re) => re.test('const settle = (ms = 200) => new Promise((r) => setTimeout(r, ms));'))).toBe(true);
  expect(SLEEP.some((re) => re.test("await elapse(300, 'absence');"))).toBe(false);
});
