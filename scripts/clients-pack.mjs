#!/usr/bin/env node
// `npm run clients:pack`: the installable client artifacts, built into .artifacts/clients/
// (ignored by git; nothing is published):
// - the TypeScript clients of clients/ as the npm package @chatapp/clients (clients/package.json:
//   its version is the APIs' version), compiled with declarations: chatapp-clients-<version>.tgz;
// - the Python clients (npm run clients:python) as one wheel per API, chatapp_<api>-<version>-…whl;
// - the Go clients (npm run clients:go) as a module zip in a GOPROXY folder layout,
//   go-proxy/<module>/@v/<version>.{zip,mod,info} and list, which `GOPROXY=file://…` installs;
// - the Java clients (openapi-generator `java`, default options but the names, built with
//   `mvn package`) as Maven artifacts com.chatapp:chatapp-<api>:<version> in a file repository,
//   maven/ (a `<repository>` with a file:// URL resolves them);
// - the Rust clients (openapi-generator `rust`, default options but the names) as crates,
//   rust/chatapp-<api>-<version>.crate (`cargo package`), which a project unpacks and depends on
//   by path.
// Every version is the documents' `info.version`; a config that says otherwise fails the run.
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { mustRun, openapiGeneratorArgs, root } from './gates/lib.mjs';

const out = join(root, '.artifacts', 'clients');
const stage = join(root, '.tmp', 'pack');
const APIS = ['account', 'connect', 'login', 'messaging'];
const PYTHON_APIS = ['connect', 'login', 'messaging'];
// Java and Rust: the APIs the Python and Go clients cover.
const OAG_APIS = PYTHON_APIS;
const GO_MODULE = 'chatapp.local/clients';
// Writes a module zip: every file under <base>/<prefix>, named by its path from <base>.
const ZIP_PY = `import os, sys, zipfile
target, base, prefix = sys.argv[1:4]
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
    for folder, _, files in os.walk(os.path.join(base, prefix)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            z.write(path, os.path.relpath(path, base))`;

const versions = new Set(APIS.map((api) => parse(readFileSync(join(root, 'generated', api, 'openapi.3.0.yaml'), 'utf8')).info.version));
if (versions.size !== 1) fail(`the APIs have different versions (${[...versions].join(', ')}): one package version cannot follow them`);
const [version] = versions;
const pkg = JSON.parse(readFileSync(join(root, 'clients', 'package.json'), 'utf8'));
if (pkg.version !== version) fail(`clients/package.json has version ${pkg.version}, the APIs ${version}`);
for (const api of PYTHON_APIS) {
  const config = parse(readFileSync(join(root, 'scripts', 'clients', `python-${api}.yaml`), 'utf8'));
  if (config.package_version_override !== version) fail(`scripts/clients/python-${api}.yaml: package_version_override is not ${version}`);
}
rmSync(out, { recursive: true, force: true });
rmSync(stage, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// TypeScript: clients/*.ts and the generated types they import, compiled side by side so the
// relative imports (../generated/<api>/types.js) hold inside the package.
const ts = join(stage, 'ts');
mkdirSync(ts, { recursive: true });
writeFileSync(
  join(stage, 'tsconfig.pack.json'),
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      declaration: true,
      skipLibCheck: true,
      types: ['node'],
      rootDir: root,
      outDir: join(ts, 'dist'),
    },
    files: [
      ...readdirSync(join(root, 'clients'))
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(root, 'clients', f)),
      ...APIS.map((api) => join(root, 'generated', api, 'types.ts')),
    ],
  }),
);
mustRun(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(stage, 'tsconfig.pack.json')]);
copyFileSync(join(root, 'clients', 'package.json'), join(ts, 'package.json'));
copyFileSync(join(root, 'clients', 'README.md'), join(ts, 'README.md'));
const tarball = mustRun('npm', ['pack', '--silent', '--pack-destination', out], { cwd: ts }).trim().split('\n').pop();
console.log(`TypeScript: .artifacts/clients/${tarball}`);

// Python: the venv of clients:python builds the wheels (its build backend is pinned there).
mustRun(process.execPath, ['scripts/clients-python.mjs']);
const pip = join(root, '.tools', 'python', 'bin', 'pip');
for (const api of PYTHON_APIS) {
  mustRun(pip, [
    'wheel',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    '--no-build-isolation',
    '--wheel-dir',
    out,
    join(root, 'clients', 'python', api),
  ]);
}
console.log(
  `Python: ${readdirSync(out)
    .filter((f) => f.endsWith('.whl'))
    .map((f) => `.artifacts/clients/${f}`)
    .join(', ')}`,
);

// Go: the module zip, laid out as a module proxy serves it.
mustRun(process.execPath, ['scripts/clients-go.mjs']);
const goVersion = `v${version}`;
const proxy = join(out, 'go-proxy', ...GO_MODULE.split('/'), '@v');
mkdirSync(proxy, { recursive: true });
const zipRoot = join(stage, 'go');
const prefix = `${GO_MODULE}@${goVersion}`;
cpSync(join(root, 'clients', 'go'), join(zipRoot, prefix), { recursive: true, filter: (src) => !src.endsWith('.stamp') });
// A module zip holds only the module's files under <module>@<version>/ (no stamps, no VCS data).
mustRun('python3', ['-c', ZIP_PY, join(proxy, `${goVersion}.zip`), zipRoot, prefix]);
copyFileSync(join(root, 'clients', 'go', 'go.mod'), join(proxy, `${goVersion}.mod`));
writeFileSync(join(proxy, `${goVersion}.info`), `${JSON.stringify({ Version: goVersion })}\n`);
writeFileSync(join(proxy, 'list'), `${goVersion}\n`);
console.log(`Go: .artifacts/clients/go-proxy/${GO_MODULE}/@v/${goVersion}.zip (module ${GO_MODULE}, GOPROXY=file://${join(out, 'go-proxy')})`);

// Java and Rust: openapi-generator with its default options; only names and the version are set.
const generate = (generator, api, dir, props) => mustRun('java', openapiGeneratorArgs(generator, api, dir, [props]));

// Java: `mvn package` per API, then each jar with its pom installed into a file repository.
const mavenRepo = join(out, 'maven');
for (const api of OAG_APIS) {
  const dir = join(stage, `java-${api}`);
  generate(
    'java',
    api,
    dir,
    `groupId=com.chatapp,artifactId=chatapp-${api},artifactVersion=${version},invokerPackage=com.chatapp.${api}.client,apiPackage=com.chatapp.${api}.api,modelPackage=com.chatapp.${api}.model`,
  );
  mustRun('mvn', ['-q', '-B', 'package', '-Dmaven.test.skip=true'], { cwd: dir });
  const built = join(dir, 'target', `chatapp-${api}-${version}.jar`);
  mustRun('mvn', ['-q', '-B', 'install:install-file', `-Dfile=${built}`, `-DpomFile=${join(dir, 'pom.xml')}`, `-DlocalRepositoryPath=${mavenRepo}`], {
    cwd: dir,
  });
}
console.log(`Java: .artifacts/clients/maven: ${OAG_APIS.map((api) => `com.chatapp:chatapp-${api}:${version}`).join(', ')}`);

// Rust: `cargo package` per API (its dependencies resolved and locked, no build).
const rustOut = join(out, 'rust');
mkdirSync(rustOut, { recursive: true });
// Staged outside the repository: inside it, cargo lists a package's files with git, which ignores .tmp/.
const rustStage = mkdtempSync(join(tmpdir(), 'pack-rust-'));
for (const api of OAG_APIS) {
  const dir = join(rustStage, `rust-${api}`);
  generate('rust', api, dir, `packageName=chatapp-${api},packageVersion=${version}`);
  mustRun('cargo', ['package', '--quiet', '--no-verify', '--allow-dirty'], { cwd: dir, env: { ...process.env, CARGO_TARGET_DIR: join(dir, 'target') } });
  copyFileSync(join(dir, 'target', 'package', `chatapp-${api}-${version}.crate`), join(rustOut, `chatapp-${api}-${version}.crate`));
}
rmSync(rustStage, { recursive: true, force: true });
console.log(`Rust: ${OAG_APIS.map((api) => `.artifacts/clients/rust/chatapp-${api}-${version}.crate`).join(', ')}`);

function fail(message) {
  console.error(`clients:pack: ${message}`);
  process.exit(1);
}
