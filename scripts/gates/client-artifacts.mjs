#!/usr/bin/env node
// Gate: the three client artifacts of `npm run clients:pack` (.artifacts/clients/), each installed
// in a clean folder outside this repository the way a user installs it, each running its smoke
// program (scripts/gates/smoke/) against the built server: list contacts, upload
// test/smoke/fixtures/photo.png, send it by `media_id`; the server must then show the message.
// - npm: `npm install <tarball>` into an empty package, then `node smoke.mjs`;
// - Python: a new venv, `pip install` the wheels, then `python smoke.py`;
// - Go: a new module requiring chatapp.local/clients from the packed GOPROXY folder (the other
//   modules from the usual proxy), then `go run .`.
//
//   node scripts/gates/client-artifacts.mjs      (after npm run clients:pack)
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkSent, mustRun, root, run, smokeServer } from './lib.mjs';

const artifacts = join(root, '.artifacts', 'clients');
const smoke = join(root, 'scripts', 'gates', 'smoke');
const files = existsSync(artifacts) ? readdirSync(artifacts) : [];
const tarball = files.find((f) => f.endsWith('.tgz'));
const wheels = files.filter((f) => f.endsWith('.whl'));
const goProxy = join(artifacts, 'go-proxy');
if (!tarball || wheels.length === 0 || !existsSync(goProxy)) {
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
// As docs/clients-python-go.md says: `go get` of the package the program imports (which records
// its dependencies' sums too), then `go build`, nothing else (no `go mod tidy`).
mustRun('go', ['get', `chatapp.local/clients/messaging@${goVersion}`], { cwd: goDir, env: goEnv });
mustRun('go', ['build', '-o', 'smoke', '.'], { cwd: goDir, env: goEnv });
programs.push({ label: `go chatapp.local/clients@${goVersion}`, cmd: join(goDir, 'smoke'), args: [], cwd: goDir });
console.log(`go: built a clean module requiring chatapp.local/clients@${goVersion}`);

const { server, env } = await smokeServer();
try {
  for (const program of programs) {
    const res = run(program.cmd, program.args, { cwd: program.cwd, env: { ...process.env, ...env } });
    process.stdout.write(res.output);
    if (res.status !== 0) throw new Error(`${program.label}: the smoke program exited ${res.status}`);
    await checkSent(env, res.output, program.label);
  }
  console.log('client artifacts gate: OK');
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
