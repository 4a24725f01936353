#!/usr/bin/env node
// Gate: Spectral (pinned below, installed into .tools/spectral, ignored by git) with the committed
// ruleset scripts/gates/spectral.yaml (spectral:oas and the OWASP API security ruleset; every rule
// switched off says why) over the eight documents. Any error fails the gate. Prints per document
// the errors and warnings.
//
//   node scripts/gates/spectral.mjs
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOCUMENTS, mustRun, root, run, tools } from './lib.mjs';

const PINS = ['@stoplight/spectral-cli@6.16.3', '@stoplight/spectral-owasp-ruleset@2.0.1'];
const ruleset = join(root, 'scripts', 'gates', 'spectral.yaml');
const dir = join(tools, 'spectral');
const stamp = join(dir, '.pins');
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== PINS.join(' ')) {
  console.log(`installing ${PINS.join(' ')} into .tools/spectral`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  mustRun('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--save-exact', '--ignore-scripts', ...PINS]);
  writeFileSync(stamp, PINS.join(' '));
}

const SEVERITY = ['error', 'warn', 'info', 'hint'];
let errors = 0;
console.log(`== ${PINS.join(' ')}, ruleset scripts/gates/spectral.yaml`);
for (const document of DOCUMENTS) {
  const res = run(join(dir, 'node_modules', '.bin', 'spectral'), ['lint', '--ruleset', ruleset, '--format', 'json', '--quiet', document], {
    // The ruleset extends the OWASP package by name: resolved from the tools' node_modules.
    env: { ...process.env, NODE_PATH: join(dir, 'node_modules') },
  });
  let results;
  try {
    results = JSON.parse(res.output.slice(res.output.indexOf('[')));
  } catch {
    console.error(`FAIL spectral on ${document} (exit ${res.status}):\n${res.output}`);
    process.exit(1);
  }
  const by = (severity) => results.filter((r) => SEVERITY[r.severity] === severity);
  errors += by('error').length;
  console.log(`${document.padEnd(38)} errors ${String(by('error').length).padStart(4)}  warnings ${String(by('warn').length).padStart(4)}`);
  for (const r of by('error')) console.error(`  ${r.code} ${r.path.join('.')}: ${r.message}`);
}
if (errors) {
  console.error(`FAIL spectral: ${errors} error(s)`);
  process.exit(1);
}
console.log('spectral gate: 0 errors in 8 documents');
