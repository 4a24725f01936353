#!/usr/bin/env node
// Gate: the client artifacts of `npm run clients:pack` (.artifacts/clients/), each installed
// in a clean folder outside this repository the way a user installs it, each running its smoke
// program (scripts/gates/smoke/) against the built server: list contacts, upload
// test/smoke/fixtures/photo.png, send it by `media_id`; the server must then show the message.
// - npm: `npm install <tarball>` into an empty package, then `node smoke.mjs`;
// - Python: a new venv, `pip install` the wheels, then `python smoke.py`;
// - Go: a new module requiring chatapp.local/clients from the packed GOPROXY folder (the other
//   modules from the usual proxy), then `go run .`;
// - Java: a new Maven project whose pom names the packed file repository and depends on
//   com.chatapp:chatapp-{connect,login,messaging}, `mvn package`, then the smoke program on its
//   classpath (which also starts a Login session and lists Connect documents with a bearer token);
// - Rust: the .crate files unpacked, a new cargo project depending on them by path, `cargo build`,
//   then its smoke program (the same steps as Java's).
//
//   node scripts/gates/client-artifacts.mjs      (after npm run clients:pack)
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLogin, checkSent, mustRun, root, run, smokeServer, tools } from './lib.mjs';

const artifacts = join(root, '.artifacts', 'clients');
const smoke = join(root, 'scripts', 'gates', 'smoke');
const files = existsSync(artifacts) ? readdirSync(artifacts) : [];
const tarball = files.find((f) => f.endsWith('.tgz'));
const wheels = files.filter((f) => f.endsWith('.whl'));
const goProxy = join(artifacts, 'go-proxy');
const mavenRepo = join(artifacts, 'maven');
const crates = existsSync(join(artifacts, 'rust')) ? readdirSync(join(artifacts, 'rust')).filter((f) => f.endsWith('.crate')) : [];
if (!tarball || wheels.length === 0 || !existsSync(goProxy) || !existsSync(mavenRepo) || crates.length === 0) {
  console.error('FAIL no artifacts in .artifacts/clients: run npm run clients:pack first');
  process.exit(1);
}
const goVersion = readdirSync(join(goProxy, 'chatapp.local', 'clients', '@v'))
  .find((f) => f.endsWith('.zip'))
  .replace(/\.zip$/, '');

const work = mkdtempSync(join(tmpdir(), 'client-artifacts-'));
const programs = [];

// npm: an empty package that installs the tarball (and its dependencies from the registry).
const npmDir = join(work, 'npm');
mkdirSync(npmDir);
writeFileSync(join(npmDir, 'package.json'), '{ "name": "smoke", "private": true, "type": "module" }\n');
mustRun('npm', ['install', '--no-audit', '--no-fund', '--silent', join(artifacts, tarball)], { cwd: npmDir });
copyFileSync(join(smoke, 'package-client.mjs'), join(npmDir, 'smoke.mjs'));
programs.push({ label: `npm ${tarball}`, cmd: process.execPath, args: ['smoke.mjs'], cwd: npmDir });
console.log(`npm: installed ${tarball} in a clean package`);

// Python: a new venv with the wheels (their dependencies from the index).
const venv = join(work, 'venv');
mustRun(process.env.PYTHON ?? 'python3', ['-m', 'venv', venv]);
mustRun(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...wheels.map((w) => join(artifacts, w))]);
programs.push({ label: `python ${wheels.join(' ')}`, cmd: join(venv, 'bin', 'python'), args: [join(smoke, 'package_client.py')], cwd: work });
console.log(`python: installed ${wheels.join(', ')} in a clean venv`);

// Go: a new module; the packed module comes from the file proxy, checked by its own go.sum line
// (it is in no checksum database), into a module cache of its own (so no earlier copy is used).
const goDir = join(work, 'go');
mkdirSync(goDir);
const upstream = run('go', ['env', 'GOPROXY']).output.trim();
const goEnv = {
  ...process.env,
  GOTOOLCHAIN: 'local',
  GOFLAGS: '-modcacherw',
  GOMODCACHE: join(work, 'gomodcache'),
  GOPROXY: `file://${goProxy},${upstream}`,
  GONOSUMDB: 'chatapp.local',
};
mustRun('go', ['mod', 'init', 'chatapp.local/smoke'], { cwd: goDir, env: goEnv });
copyFileSync(join(smoke, 'go-module', 'main.go'), join(goDir, 'main.go'));
// As docs/clients.md says: `go get` of the package the program imports (which records
// its dependencies' sums too), then `go build`, nothing else (no `go mod tidy`).
mustRun('go', ['get', `chatapp.local/clients/messaging@${goVersion}`], { cwd: goDir, env: goEnv });
mustRun('go', ['build', '-o', 'smoke', '.'], { cwd: goDir, env: goEnv });
programs.push({ label: `go chatapp.local/clients@${goVersion}`, cmd: join(goDir, 'smoke'), args: [], cwd: goDir });
console.log(`go: built a clean module requiring chatapp.local/clients@${goVersion}`);

// Java: a new Maven project depending on the packed artifacts (their dependencies from Maven Central).
const oag = join(smoke, 'oag');
const javaDir = join(work, 'java');
mkdirSync(join(javaDir, 'src', 'main', 'java'), { recursive: true });
const javaVersion = readdirSync(join(mavenRepo, 'com', 'chatapp', 'chatapp-messaging'))[0];
const javaDeps = ['connect', 'login', 'messaging']
  .map((api) => `<dependency><groupId>com.chatapp</groupId><artifactId>chatapp-${api}</artifactId><version>${javaVersion}</version></dependency>`)
  .join('\n    ');
writeFileSync(
  join(javaDir, 'pom.xml'),
  `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.smoke</groupId>
  <artifactId>smoke</artifactId>
  <version>0.0.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>chatapp-clients</id><url>file://${mavenRepo}</url></repository>
  </repositories>
  <dependencies>
    ${javaDeps}
  </dependencies>
</project>
`,
);
copyFileSync(join(oag, 'java', 'Smoke.java'), join(javaDir, 'src', 'main', 'java', 'Smoke.java'));
mustRun('mvn', ['-q', '-B', 'package', '-Dmaven.test.skip=true'], { cwd: javaDir });
mustRun('mvn', ['-q', '-B', 'dependency:build-classpath', '-Dmdep.outputFile=classpath.txt'], { cwd: javaDir });
const javaClasspath = `${join(javaDir, 'target', 'classes')}:${readFileSync(join(javaDir, 'classpath.txt'), 'utf8').trim()}`;
programs.push({ label: `java com.chatapp:chatapp-*:${javaVersion}`, cmd: 'java', args: ['-cp', javaClasspath, 'Smoke'], cwd: javaDir, full: true });
console.log(`java: built a clean Maven project depending on com.chatapp:chatapp-{connect,login,messaging}:${javaVersion}`);

// Rust: the crates unpacked into the clean project and depended on by path (the names the
// smoke program uses are those of the gate's crates: Cargo renames them).
const rustDir = join(work, 'rust');
mkdirSync(join(rustDir, 'vendor'), { recursive: true });
for (const crate of crates) mustRun('tar', ['-xzf', join(artifacts, 'rust', crate), '-C', join(rustDir, 'vendor')]);
const rustDeps = crates.map((crate) => {
  const name = crate.replace(/-\d+\.\d+\.\d+\.crate$/, '');
  return `${name}-oag = { package = "${name}", path = "vendor/${crate.replace(/\.crate$/, '')}" }`;
});
writeFileSync(
  join(rustDir, 'Cargo.toml'),
  `[package]\nname = "smoke"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n${rustDeps.join('\n')}\ntokio = { version = "1", features = ["macros", "rt-multi-thread"] }\n`,
);
cpSync(join(oag, 'rust', 'src'), join(rustDir, 'src'), { recursive: true });
// The build folder is kept between runs (.tools/cargo-target, shared with gate:openapi-generator): the clients' dependencies build once.
const rustTarget = join(tools, 'cargo-target');
mustRun('cargo', ['build', '--quiet'], { cwd: rustDir, env: { ...process.env, CARGO_TARGET_DIR: rustTarget, CARGO_TERM_COLOR: 'never' } });
programs.push({ label: `rust ${crates.join(' ')}`, cmd: join(rustTarget, 'debug', 'smoke'), args: [], cwd: rustDir, full: true });
console.log(`rust: built a clean cargo project depending on ${crates.join(', ')} by path`);

const { server, env } = await smokeServer({ seedOwner: true });
try {
  for (const program of programs) {
    const res = run(program.cmd, program.args, { cwd: program.cwd, env: { ...process.env, ...env } });
    process.stdout.write(res.output);
    if (res.status !== 0) throw new Error(`${program.label}: the smoke program exited ${res.status}`);
    await checkSent(env, res.output, program.label);
    if (program.full) await checkLogin(env, res.output, program.label);
  }
  console.log('client artifacts gate: OK');
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
