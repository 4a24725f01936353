#!/usr/bin/env node
// Gate: openapi-generator (the Maven Central jar, pinned below, run with `java -jar`) generates six
// clients for every API from generated/<api>/openapi.3.0.yaml with its DEFAULT options: only
// package names (and the output folder) are set, as a user following the generator's README does.
// typescript-fetch and typescript-axios compile with `tsc --strict` (axios pinned below); python
// installs into a venv and every module imports; go builds (`go build ./...`); java (its default
// library, okhttp-gson) builds with `mvn package`; rust builds with `cargo build`. Then a smoke
// program per stack (scripts/gates/smoke/oag/) runs against the built server: it lists contacts,
// uploads test/smoke/fixtures/photo.png with uploadMedia and sends it by `media_id`, lists Connect
// documents with a bearer token and starts a Login session; the server must show that image
// message and that pending session. Any generation error, compile, import or smoke failure fails
// the gate. Each generator's warnings are printed per client, grouped by kind.
// Caches: the jar in .tools/openapi-generator, axios in .tools/gates-axios, the Python venv in
// .tools/gates-python-clients, Maven's in ~/.m2, cargo's registry in ~/.cargo and the Rust build in
// .tools/cargo-target (all ignored by git); the output goes to .tmp/gates/openapi-generator.
//
//   node scripts/gates/openapi-generator.mjs [--no-smoke] [--only=go,java] [--reuse]
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  APIS,
  checkLogin,
  checkSent,
  mustRun,
  OPENAPI_GENERATOR_VERSION,
  openapiGeneratorArgs,
  root,
  run,
  smokeServer,
  tmpFolder,
  tools,
  venv,
} from './lib.mjs';

const PYTHON_RUNTIME = ['urllib3==2.7.0', 'python-dateutil==2.9.0.post0', 'pydantic==2.14.4', 'typing-extensions==4.16.0'];
const AXIOS = 'axios@1.21.1';
// Package names only: every other option is the generator's default.
const GENERATORS = {
  'typescript-fetch': () => [],
  'typescript-axios': () => [],
  python: (api) => [`packageName=chatapp_${api}_oag,projectName=chatapp-${api}-oag`],
  go: (api) => [`packageName=${api},gitUserId=chatapp,gitRepoId=${api}-oag`],
  java: (api) => [
    `groupId=com.chatapp,artifactId=chatapp-${api}-oag,invokerPackage=com.chatapp.${api}.client,apiPackage=com.chatapp.${api}.api,modelPackage=com.chatapp.${api}.model`,
  ],
  rust: (api) => [`packageName=chatapp-${api}-oag`],
};
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const stacks = Object.keys(GENERATORS).filter((g) => !only || only.includes(g));
const smokeApis = ['connect', 'login', 'messaging'];
const smoke = join(root, 'scripts', 'gates', 'smoke', 'oag');
const seconds = {};
const timed = (label, fn) => {
  const started = Date.now();
  const result = fn();
  seconds[label] = (seconds[label] ?? 0) + (Date.now() - started) / 1000;
  return result;
};

// --reuse: keep the outputs of an earlier run (for working on the smoke programs).
const reuse = process.argv.includes('--reuse');
const out = reuse ? join(root, '.tmp', 'gates', 'openapi-generator') : tmpFolder('openapi-generator');
const report = [];
let failed = false;
for (const generator of stacks) {
  for (const api of APIS) {
    const dir = join(out, `${generator}-${api}`);
    if (reuse && existsSync(dir)) continue;
    const props = GENERATORS[generator](api);
    const args = openapiGeneratorArgs(generator, api, dir, props);
    const res = timed(`generate ${generator}`, () => run('java', args));
    const lines = res.output.split('\n');
    // An error line, or an exception's trace (INFO lines name files such as ApiException.java).
    const errors = lines.filter((l) => /\bERROR\b/.test(l) || (/Exception/.test(l) && !/\bINFO\b/.test(l)));
    const warnings = lines.filter((l) => /\bWARN\b/.test(l));
    report.push({ api, generator, errors: errors.length, warnings: warnings.length, kinds: kindsOf(warnings) });
    if (res.status !== 0 || errors.length) {
      failed = true;
      console.error(`FAIL ${generator} ${api}: exit ${res.status}\n${errors.join('\n') || res.output.slice(-3000)}`);
    }
  }
}
console.log('== openapi-generator', OPENAPI_GENERATOR_VERSION, 'with default options (errors / warnings per client; warnings by kind)');
for (const r of report) {
  console.log(`${r.api.padEnd(10)} ${r.generator.padEnd(17)} errors ${r.errors}  warnings ${r.warnings}`);
  for (const [kind, n] of r.kinds.slice(0, 8)) console.log(`${' '.repeat(29)}${String(n).padStart(5)}  ${kind}`);
  if (r.kinds.length > 8) console.log(`${' '.repeat(36)}… ${r.kinds.length - 8} more kinds (warnings.txt)`);
}
// Every kind of every client, for the record.
writeFileSync(
  join(out, 'warnings.txt'),
  report
    .map((r) => `${r.api} ${r.generator}: ${r.warnings} warnings\n${r.kinds.map(([kind, n]) => `${String(n).padStart(6)}  ${kind}`).join('\n')}\n`)
    .join('\n'),
);
if (failed) process.exit(1);

const tsc = join(root, 'node_modules', '.bin', 'tsc');
const tsOptions = { strict: true, target: 'ES2022', module: 'commonjs', moduleResolution: 'node', lib: ['ES2022', 'DOM'], types: ['node'], skipLibCheck: true };
if (stacks.includes('typescript-axios')) {
  // axios, the one dependency of the typescript-axios clients, pinned, where their imports find it.
  const axiosDir = join(tools, 'gates-axios');
  if (!existsSync(join(axiosDir, 'node_modules', 'axios', 'package.json')) || readFileSync(join(axiosDir, '.pin'), 'utf8') !== AXIOS) {
    mkdirSync(axiosDir, { recursive: true });
    writeFileSync(join(axiosDir, 'package.json'), '{ "private": true }\n');
    mustRun('npm', ['install', '--no-audit', '--no-fund', '--silent', '--save-exact', AXIOS], { cwd: axiosDir });
    writeFileSync(join(axiosDir, '.pin'), AXIOS);
  }
  rmSync(join(out, 'node_modules'), { force: true });
  symlinkSync(join(axiosDir, 'node_modules'), join(out, 'node_modules'));
}
for (const generator of stacks.filter((g) => g.startsWith('typescript-'))) {
  for (const api of APIS) {
    const dir = join(out, `${generator}-${api}`);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...tsOptions, noEmit: true }, files: ['index.ts'] }));
    timed(`compile ${generator}`, () => mustRun(tsc, ['-p', dir]));
    console.log(`${generator} ${api}: tsc --strict OK`);
  }
}

let bin;
if (stacks.includes('python')) {
  // One venv, every package installed, every module imported.
  bin = venv('gates-python-clients', [...PYTHON_RUNTIME]);
  const importAll = `import importlib, pkgutil, sys
for name in sys.argv[1:]:
    package = importlib.import_module(name)
    count = 0
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
        count += 1
    print(f"python {name}: {count} modules import")`;
  timed('compile python', () => {
    mustRun(join(bin, 'pip'), [
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--force-reinstall',
      ...APIS.map((api) => join(out, `python-${api}`)),
    ]);
    process.stdout.write(mustRun(join(bin, 'python'), ['-c', importAll, ...APIS.map((api) => `chatapp_${api}_oag`)]));
  });
}

const goEnv = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-modcacherw -mod=mod' };
if (stacks.includes('go')) {
  for (const api of APIS) {
    timed('compile go', () => mustRun('go', ['build', './...'], { cwd: join(out, `go-${api}`), env: goEnv }));
    console.log(`go ${api}: go build OK`);
  }
  // The smoke module requires the generated modules from their folders.
  const dir = join(out, 'smoke-go');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  copyFileSync(join(smoke, 'go', 'main.go'), join(dir, 'main.go'));
  const requires = smokeApis.map((api) => `github.com/chatapp/${api}-oag v0.0.0`);
  const replaces = smokeApis.map((api) => `github.com/chatapp/${api}-oag => ../go-${api}`);
  writeFileSync(
    join(dir, 'go.mod'),
    `module chatapp.local/oag-smoke\n\ngo 1.23\n\nrequire (\n\t${requires.join('\n\t')}\n)\n\nreplace (\n\t${replaces.join('\n\t')}\n)\n`,
  );
  timed('compile go', () => {
    mustRun('go', ['mod', 'tidy'], { cwd: dir, env: goEnv });
    mustRun('go', ['build', '-o', 'smoke', '.'], { cwd: dir, env: goEnv });
  });
}

let javaClasspath;
if (stacks.includes('java')) {
  const jars = [];
  const deps = new Set();
  for (const api of APIS) {
    const dir = join(out, `java-${api}`);
    timed('compile java', () => mustRun('mvn', ['-q', '-B', 'package', '-Dmaven.test.skip=true'], { cwd: dir }));
    const built = readdirSync(join(dir, 'target')).find((f) => f.endsWith('.jar') && !/-(sources|javadoc)\.jar$/.test(f));
    if (!built) throw new Error(`java ${api}: mvn package built no jar`);
    console.log(`java ${api}: mvn package OK (target/${built})`);
    if (!smokeApis.includes(api)) continue;
    jars.push(join(dir, 'target', built));
    timed('compile java', () => mustRun('mvn', ['-q', '-B', 'dependency:build-classpath', `-Dmdep.outputFile=${join(dir, 'classpath.txt')}`], { cwd: dir }));
    for (const dep of readFileSync(join(dir, 'classpath.txt'), 'utf8').trim().split(':')) if (dep) deps.add(dep);
  }
  javaClasspath = [...jars, ...deps].join(':');
}

let rustSmoke;
if (stacks.includes('rust')) {
  // One target folder for every crate, so their dependencies build once (and are kept between runs).
  const cargoEnv = { ...process.env, CARGO_TARGET_DIR: join(tools, 'cargo-target'), CARGO_TERM_COLOR: 'never' };
  timed('compile rust', () => mustRun('cargo', ['build', '--quiet', '--manifest-path', join(out, 'rust-account', 'Cargo.toml')], { env: cargoEnv }));
  console.log('rust account: cargo build OK');
  const dir = join(out, 'smoke-rust');
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(smoke, 'rust', 'src'), join(dir, 'src'), { recursive: true });
  const deps = smokeApis.map((api) => `chatapp-${api}-oag = { path = "../rust-${api}" }`);
  writeFileSync(
    join(dir, 'Cargo.toml'),
    `[package]\nname = "oag-smoke"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n${deps.join('\n')}\ntokio = { version = "1", features = ["macros", "rt-multi-thread"] }\n`,
  );
  timed('compile rust', () => mustRun('cargo', ['build', '--quiet', '--manifest-path', join(dir, 'Cargo.toml')], { env: cargoEnv }));
  console.log(`rust ${smokeApis.join(', ')}: cargo build OK (with the smoke program)`);
  rustSmoke = join(tools, 'cargo-target', 'debug', 'oag-smoke');
}

let smokeTs;
if (stacks.some((g) => g.startsWith('typescript-'))) {
  // The smoke programs compile beside the clients (their imports are ../<generator>-<api>/index).
  smokeTs = join(out, 'smoke-ts');
  rmSync(smokeTs, { recursive: true, force: true });
  mkdirSync(smokeTs);
  const files = stacks.filter((g) => g.startsWith('typescript-')).map((g) => `${g}.ts`);
  for (const f of files) copyFileSync(join(smoke, f), join(smokeTs, f));
  writeFileSync(join(smokeTs, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...tsOptions, outDir: 'dist', rootDir: '..' }, files }));
  timed('compile typescript smoke', () => mustRun(tsc, ['-p', smokeTs]));
  // CommonJS output inside this repository's "type": "module" package.
  writeFileSync(join(smokeTs, 'dist', 'package.json'), '{"type": "commonjs"}\n');
  if (stacks.includes('typescript-axios')) symlinkSync(join(out, 'node_modules'), join(smokeTs, 'dist', 'node_modules'));
}

if (process.argv.includes('--no-smoke')) {
  printSeconds();
  process.exit(0);
}

const programs = {
  'typescript-fetch': () => [process.execPath, [join(smokeTs, 'dist', 'smoke-ts', 'typescript-fetch.js')]],
  'typescript-axios': () => [process.execPath, [join(smokeTs, 'dist', 'smoke-ts', 'typescript-axios.js')]],
  python: () => [join(bin, 'python'), [join(smoke, 'python_client.py')]],
  go: () => [join(out, 'smoke-go', 'smoke'), []],
  java: () => ['java', ['-cp', javaClasspath, join(smoke, 'java', 'Smoke.java')]],
  rust: () => [rustSmoke, []],
};
const { server, env } = await smokeServer({ seedOwner: true });
try {
  for (const generator of stacks) {
    const [cmd, args] = programs[generator]();
    const res = timed(`smoke ${generator}`, () => run(cmd, args, { env: { ...process.env, ...env } }));
    process.stdout.write(res.output);
    if (res.status !== 0) throw new Error(`the ${generator} smoke program failed (exit ${res.status})`);
    await checkSent(env, res.output, `${generator} smoke`);
    await checkLogin(env, res.output, `${generator} smoke`);
  }
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  await server.stop();
}
printSeconds();
if (!process.exitCode) console.log(`openapi-generator gate: OK (${stacks.join(', ')}; ${readdirSync(out).length} outputs in .tmp/gates/openapi-generator)`);

function printSeconds() {
  console.log('== seconds per stage');
  for (const [label, s] of Object.entries(seconds)) console.log(`${s.toFixed(0).padStart(6)}  ${label}`);
}

/** Warnings grouped by their message with numbers blanked, most frequent first. */
function kindsOf(warnings) {
  const counts = new Map();
  for (const w of warnings) {
    const kind = w
      .replace(/^.*?\bWARN\b\s*/, '')
      .replace(/\d+/g, 'N')
      .slice(0, 110);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
}
