// docs/security.md's index of the catalogue cases named in server/ is current (npm run docs:security-index).
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { withIndex } from '../../../scripts/security-index.mjs';

it('docs/security.md lists every bad-inputs case named under server/', () => {
  const doc = readFileSync(new URL('../../../docs/security.md', import.meta.url), 'utf8');
  expect(doc).toBe(withIndex(doc));
  expect(doc).toMatch(/\| K3 \| .*server\/plugins\/rate-limits\.ts/);
});
