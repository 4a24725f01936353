// The index of docs/security.md: every case of the bad-input catalogue
// (../shared/reliability/bad-inputs.md) that a comment under server/ names as `bad-inputs <id>`,
// with the modules that name it, so a reader finds the code behind a case from its id alone.
// `npm run docs:security-index` rewrites the list between the markers; a unit test fails when it
// is stale (test/unit/docs/security-index.test.ts).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const START = '<!-- bad-inputs-index:start -->';
const END = '<!-- bad-inputs-index:end -->';
const ID = String.raw`(?:[A-Z]\d{1,2}|F-\d{1,2})`;
// `bad-inputs K3, K10-K12`, `bad-inputs E1/E2`, `bad-inputs D9–D12`, `bad-inputs F-1 and F-2`
const TAG = new RegExp(String.raw`bad-inputs (${ID}(?:(?:, | and |/|-|–)${ID})*)`, 'g');

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (/\.ts$/.test(entry.name)) yield path;
  }
}

const order = (id) => {
  const [, group, n] = /^([A-Z])-?(\d+)$/.exec(id) ?? [];
  return (id.startsWith('F-') ? 'Z' : group) + String(n).padStart(3, '0');
};

/** `K10-K12` → K10, K11, K12; `F-1` stays. */
function expand(list) {
  const ids = [];
  for (const part of list.split(/, | and |\//)) {
    const range = /^([A-Z])(\d+)[-–]\1?(\d+)$/.exec(part);
    if (range) for (let n = Number(range[2]); n <= Number(range[3]); n++) ids.push(`${range[1]}${n}`);
    else ids.push(part);
  }
  return ids;
}

export function securityIndex() {
  const byId = new Map();
  for (const file of sources(join(root, 'server'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(TAG)) {
      for (const id of expand(match[1])) {
        const files = byId.get(id) ?? byId.set(id, new Set()).get(id);
        files.add(relative(root, file));
      }
    }
  }
  const ids = [...byId.keys()].sort((a, b) => order(a).localeCompare(order(b)));
  return [
    '| case | named in |',
    '|---|---|',
    ...ids.map(
      (id) =>
        `| ${id} | ${[...byId.get(id)]
          .sort()
          .map((f) => `\`${f}\``)
          .join(', ')} |`,
    ),
  ].join('\n');
}

export function withIndex(markdown) {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/security.md lacks the ${START} … ${END} markers`);
  return `${markdown.slice(0, start + START.length)}\n${securityIndex()}\n${markdown.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = join(root, 'docs/security.md');
  writeFileSync(path, withIndex(readFileSync(path, 'utf8')));
}
