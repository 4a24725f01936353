// The README's list of operations that answer 501 matches the server.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { readmeWithList } from '../../scripts/not-implemented.js';

it('README lists exactly the operations that are not implemented (npm run readme:ops)', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  expect(readme).toBe(readmeWithList(readme));
});
