#!/usr/bin/env node
// Gate: openapi-generator (the Maven Central jar, pinned below, run with `java -jar`) generates a
// `typescript-fetch` and a `python` client for every API from generated/<api>/openapi.3.0.yaml.
// Generation must end without an error; each TypeScript client compiles with `tsc --strict`;
// each Python package installs into a venv and every module imports; then a smoke program of
// each language (scripts/gates/smoke/) runs against the built server: it lists contacts, uploads
// test/smoke/fixtures/photo.png with uploadMedia and sends it by `media_id`, and the server must
// show that image message. The jar is cached in .tools/openapi-generator (ignored by git); the
// output goes to .tmp/gates/openapi-generator. Generator warnings are counted per client.
//
//   node scripts/gates/openapi-generator.mjs [--no-smoke]
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APIS, checkSent, mustRun, root, run, smokeServer, tmpFolder, tools, venv } from './lib.mjs';

const VERSION = '7.25.0';
const ARTIFACT = `org.openapitools:openapi-generator-cli:${VERSION}`;
const PYTHON_RUNTIME = ['urllib3==2.7.0', 'python-dateutil==2.9.0.post0', 'pydantic==2.14.4', 'typing-extensions==4.16.0'];
// Options every generated client gets. skipFormModel=false: openapi-generator drops schemas used
// only in form bodies, yet typescript-fetch still imports the one of an operation with both a JSON
// and a multipart body (`SendMediaUpload` of sendMessage), so the client would not compile.
const GLOBAL = ['--global-property', 'skipFormModel=false'];
// modelPropertyNaming=original: the documents spell "no other property" `additionalProperties:
// {not: {}}`, which typescript-fetch reads as "any other property" and so spreads the model into
// the JSON it sends; with camelCase names that spread adds unknown keys the server refuses (400).
const GENERATORS = {
  'typescript-fetch': (api) => ['--additional-properties', `npmName=@chatapp/${api}-openapi-generator,supportsES6=true,modelPropertyNaming=original`],
  python: (api) => ['--additional-properties', `packageName=chatapp_${api}_oag,projectName=chatapp-${api}-oag`],
};

const jarDir = join(tools, 'openapi-generator');
const jar = join(jarDir, `openapi-generator-cli-${VERSION}.jar`);
if (!existsSync(jar)) {
  console.log(`fetching ${ARTIFACT} from Maven Central into .tools/openapi-generator`);
  mkdirSync(jarDir, { recursive: true });
  mustRun('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${ARTIFACT}`, `-DoutputDirectory=${jarDir}`]);
}

const out = tmpFolder('openapi-generator');
const report = [];
let failed = false;
for (const api of APIS) {
  for (const [generator, options] of Object.entries(GENERATORS)) {
    const dir = join(out, `${generator}-${api}`);
    const res = run('java', ['-jar', jar, 'generate', '-g', generator, '-i', `generated/${api}/openapi.3.0.yaml`, '-o', dir, ...GLOBAL, ...options(api)]);
    const lines = res.output.split('\n');
    const errors = lines.filter((l) => /\bERROR\b|Exception/.test(l));
    const warnings = lines.filter((l) => /\bWARN\b/.test(l));
    report.push({ api, generator, errors: errors.length, warnings: warnings.length, kinds: kindsOf(warnings) });
    if (res.status !== 0 || errors.length) {
      failed = true;
      console.error(`FAIL ${generator} ${api}: exit ${res.status}\n${errors.join('\n') || res.output.slice(-3000)}`);
    }
  }
}
console.log('== openapi-generator', VERSION, '(errors / warnings per client; warnings by kind)');
for (const r of report) {
  console.log(`${r.api.padEnd(10)} ${r.generator.padEnd(17)} errors ${r.errors}  warnings ${r.warnings}`);
  for (const [kind, n] of r.kinds) console.log(`${' '.repeat(29)}${String(n).padStart(4)}  ${kind}`);
}
if (failed) process.exit(1);

// TypeScript: each client with its own tsconfig, strict.
const tsc = join(root, 'node_modules', '.bin', 'tsc');
for (const api of APIS) {
  mustRun(tsc, ['--strict', '--noEmit', '-p', join(out, `typescript-fetch-${api}`)]);
  console.log(`typescript-fetch ${api}: tsc --strict OK`);
}

// Python: one venv, every package installed, every module imported.
const bin = venv('gates-python-clients', [...PYTHON_RUNTIME]);
mustRun(join(bin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', '--no-deps', ...APIS.map((api) => join(out, `python-${api}`))]);
const importAll = `import importlib, pkgutil, sys
for name in sys.argv[1:]:
    package = importlib.import_module(name)
    count = 0
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
        count += 1
    print(f"python {name}: {count} modules import")`;
process.stdout.write(mustRun(join(bin, 'python'), ['-c', importAll, ...APIS.map((api) => `chatapp_${api}_oag`)]));

if (process.argv.includes('--no-smoke')) process.exit(0);

// The smoke programs against the built server.
const smokeDir = join(out, 'smoke-ts');
mkdirSync(smokeDir, { recursive: true });
copyFileSync(join(root, 'scripts', 'gates', 'smoke', 'generated-client.ts'), join(smokeDir, 'smoke.ts'));
writeFileSync(
  join(smokeDir, 'tsconfig.json'),
  JSON.stringify({
    compilerOptions: {
      strict: true,
      target: 'ES2022',
      module: 'commonjs',
      lib: ['ES2022', 'DOM'],
      types: ['node'],
      outDir: 'dist',
      rootDir: '..',
      skipLibCheck: true,
    },
    files: ['smoke.ts'],
  }),
);
mustRun(tsc, ['-p', smokeDir]);
// CommonJS output inside this repository's "type": "module" package.
writeFileSync(join(smokeDir, 'dist', 'package.json'), '{"type": "commonjs"}\n');
const { server, env } = await smokeServer();
try {
  const ts = run(process.execPath, [join(smokeDir, 'dist', 'smoke-ts', 'smoke.js')], { env: { ...process.env, ...env } });
  process.stdout.write(ts.output);
  if (ts.status !== 0) throw new Error('the TypeScript smoke program failed');
  await checkSent(env, ts.output, 'typescript-fetch smoke');
  const py = run(join(bin, 'python'), [join(root, 'scripts', 'gates', 'smoke', 'generated_client.py')], { env: { ...process.env, ...env } });
  process.stdout.write(py.output);
  if (py.status !== 0) throw new Error('the Python smoke program failed');
  await checkSent(env, py.output, 'python smoke');
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  await server.stop();
}
if (!process.exitCode) console.log(`openapi-generator gate: OK (${readdirSync(out).length} outputs in .tmp/gates/openapi-generator)`);

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
