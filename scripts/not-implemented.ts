// Lists the operations that answer 501 (no handler yet), per API, as the README shows them.
// `npm run readme:ops` rewrites the README's list; a unit test fails when it is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { implemented } from '#server/app.js';
import { API_NAMES, contractOperations } from '#server/contract.js';

const START = '<!-- not-implemented:start -->';
const END = '<!-- not-implemented:end -->';

export function notImplementedMarkdown(): string {
  const lines: string[] = [];
  let total = 0;
  for (const api of API_NAMES) {
    const done = implemented(api);
    const missing = contractOperations(api)
      .map((op) => op.operationId)
      .filter((id) => !done.has(id));
    total += missing.length;
    lines.push(`- **${api}** (${missing.length}): ${missing.length ? missing.map((id) => `\`${id}\``).join(', ') : 'none'}`);
  }
  if (total === 0) return `Every operation of the ${API_NAMES.length} documents (${API_NAMES.join(', ')}) has a handler: none answers 501.`;
  return [`${total} operations answer 501:`, '', ...lines].join('\n');
}

export function readmeWithList(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md lacks the ${START} … ${END} markers`);
  return `${readme.slice(0, start + START.length)}\n${notImplementedMarkdown()}\n${readme.slice(end)}`;
}

if (process.argv[1]?.endsWith('not-implemented.ts')) {
  const path = new URL('../README.md', import.meta.url);
  const next = readmeWithList(readFileSync(path, 'utf8'));
  writeFileSync(path, next);
  console.log(notImplementedMarkdown());
}
