#!/usr/bin/env node
// `npm run api:changelog`: writes CHANGELOG.md, the changes of the API surface, from oasdiff's
// diff of each API's generated 3.1 document: the working tree against the last release tag
// (`v*`), each release against the one before, the first against the baseline commit.
// `npm run api:breaking`: exits 1 when the working tree breaks a client of the last release (or,
// before the first tag, of the baseline); it prints what it compared.
// oasdiff is a Go program, pinned and installed on first use into .tools/ (ignored by git).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APIS } from './lib/apis.mjs';
import { BASELINE, breakingLines, releaseTags, renderApi, sections } from './lib/api-diff.mjs';

const OASDIFF_VERSION = 'v1.36.0';
const root = new URL('..', import.meta.url).pathname;
const tmp = join(root, '.tmp', 'api-diff');
const breakingMode = process.argv.includes('--breaking');
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

function oasdiff() {
  const bin = process.env.OASDIFF ?? join(root, '.tools', 'oasdiff');
  if (existsSync(bin)) return bin;
  console.error(`installing oasdiff ${OASDIFF_VERSION} into .tools/ (once)…`);
  execFileSync('go', ['install', `github.com/oasdiff/oasdiff@${OASDIFF_VERSION}`], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, GOBIN: join(root, '.tools') },
  });
  return bin;
}

/** The document of `api` at `ref` written to a file (null: the API did not exist then); ref null = working tree. */
function documentAt(api, ref) {
  const path = `generated/${api}/openapi.3.1.yaml`;
  if (ref === null) return join(root, path);
  try {
    git('cat-file', '-e', `${ref}^{commit}`);
  } catch {
    throw new Error(`${ref} is not in this clone (a shallow clone? fetch the history with \`git fetch --unshallow --tags\`)`);
  }
  let text;
  try {
    text = git('show', `${ref}:${path}`);
  } catch {
    return null;
  }
  const file = join(tmp, ref.replace(/[^\w.-]/g, '_'), `${api}.yaml`);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** oasdiff's findings between two documents (`changelog -f json`: every change, with its level). */
function findings(bin, base, revision) {
  // External refs off: our documents have none, and oasdiff would otherwise fetch what one names.
  const out = execFileSync(bin, ['changelog', base, revision, '--allow-external-refs=false', '-f', 'json'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(out || '[]') ?? [];
}

/** An accepted entry covers a finding of its rule in its APIs, and, when it names `paths`, only on those paths. */
function acceptedCovers(entry, api, line) {
  if (!entry.apis.includes(api) || !line.endsWith(`[${entry.rule}]`)) return false;
  return !entry.paths || entry.paths.some((path) => line.includes(` ${path}: `));
}

const bin = oasdiff();
const tags = git('tag', '-l', 'v*').split('\n').filter(Boolean);

if (breakingMode) {
  const last = releaseTags(tags).at(-1);
  const base = last ? { ref: last, label: `release ${last}` } : BASELINE;
  console.log(
    last
      ? `api:breaking: comparing the working tree with the last release tag ${last}`
      : `api:breaking: no release tag (v*) yet: comparing the working tree with the ${BASELINE.label}`,
  );
  // Breaking changes accepted against this very base, each with its reason (api-accepted-changes.json).
  const accepted = JSON.parse(readFileSync(join(root, 'api-accepted-changes.json'), 'utf8')).accepted.filter((a) => a.base === base.ref);
  let total = 0;
  for (const { name } of APIS) {
    const before = documentAt(name, base.ref);
    if (!before) {
      console.log(`  ${name}: new since ${base.label}, nothing to break`);
      continue;
    }
    const all = breakingLines(name, findings(bin, before, documentAt(name, null)));
    const lines = all.filter((line) => !accepted.some((a) => acceptedCovers(a, name, line)));
    total += lines.length;
    console.log(
      `  ${name}: ${lines.length} breaking change(s)${all.length > lines.length ? `, ${all.length - lines.length} accepted in api-accepted-changes.json` : ''}`,
    );
    for (const line of lines) console.log(`    ${line}`);
  }
  if (total) {
    console.error(`api:breaking: ${total} breaking change(s) against ${base.label}. Make them compatible, or release a new major version.`);
    process.exit(1);
  }
  console.log(`api:breaking: no breaking change against ${base.label}`);
} else {
  const parts = [
    '# API changelog',
    '',
    'The changes of the published API surface (`generated/<api>/openapi.3.1.yaml`), written by',
    `\`npm run api:changelog\` from [oasdiff](https://github.com/oasdiff/oasdiff) ${OASDIFF_VERSION}. Do not edit by hand.`,
    `Releases are the git tags \`v*\`; before the first one, changes are counted from the ${BASELINE.label}.`,
    '`npm run api:breaking` fails on a breaking change against the last release.',
    '',
  ];
  for (const section of sections(tags)) {
    parts.push(`## ${section.title}`, '', `Compared with ${section.base.label}.`, '');
    for (const { name } of APIS) {
      const before = documentAt(name, section.base.ref);
      const after = documentAt(name, section.revision?.ref ?? null);
      if (!after) continue;
      parts.push(before ? renderApi(name, findings(bin, before, after)) : renderApi(name, [], { newApi: true }));
    }
  }
  writeFileSync(join(root, 'CHANGELOG.md'), parts.join('\n'));
  console.log(`wrote CHANGELOG.md (${sections(tags).length} section(s))`);
}
