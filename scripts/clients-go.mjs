#!/usr/bin/env node
// `npm run clients:go`: oapi-codegen (pinned below, installed into .tools/go/bin) generates one
// package per API from generated/<api>/openapi.3.0.yaml (oapi-codegen reads OpenAPI 3.0) into
// clients/go/<api>/ with the config scripts/clients/go-<api>.yaml, under one module
// `chatapp.local/clients` (go.mod written here, runtime pinned), then builds and vets it.
// Any generator output (warnings) fails the run: fix the spec, never the generated code.
// Skips the work when the documents, configs and pins are those of the last run (.stamp).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const OAPI_CODEGEN = 'v2.8.2';
const RUNTIME = 'v1.8.0';
const MODULE = 'chatapp.local/clients';
const APIS = ['connect', 'login', 'messaging'];

const root = new URL('..', import.meta.url).pathname;
const gobin = join(root, '.tools', 'go', 'bin');
const codegen = join(gobin, 'oapi-codegen');
const out = join(root, 'clients', 'go');
const force = process.argv.includes('--force');
// No toolchain download: the installed Go builds it (go.mod asks for 1.24).
const env = { ...process.env, GOBIN: gobin, GOTOOLCHAIN: 'local', GOFLAGS: `${process.env.GOFLAGS ?? ''} -modcacherw`.trim() };

const stamp = createHash('sha256').update(`${OAPI_CODEGEN} ${RUNTIME} ${MODULE}`);
for (const api of APIS) stamp.update(readFileSync(join(root, 'generated', api, 'openapi.3.0.yaml'))).update(readFileSync(join(root, 'scripts', 'clients', `go-${api}.yaml`)));
const digest = stamp.digest('hex');
const stampFile = join(out, '.stamp');
if (!force && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === digest) {
  console.log('clients/go is up to date.');
  process.exit(0);
}

/** Runs a command; answers its stdout and stderr together, exits on failure. */
function run(cmd, args, cwd = root) {
  const res = spawnSync(cmd, args, { cwd, env, encoding: 'utf8' });
  const output = `${res.stdout ?? ''}${res.stderr ?? ''}`;
  if (res.status !== 0) {
    process.stderr.write(output);
    console.error(`${cmd} ${args.join(' ')} failed (${res.error?.message ?? `exit ${res.status}`})`);
    process.exit(1);
  }
  return output;
}

const installed = existsSync(codegen) ? run(codegen, ['-version']) : '';
if (!installed.includes(OAPI_CODEGEN)) {
  console.log(`installing oapi-codegen ${OAPI_CODEGEN} into .tools/go/bin`);
  run('go', ['install', `github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@${OAPI_CODEGEN}`]);
}

rmSync(out, { recursive: true, force: true });
for (const api of APIS) {
  mkdirSync(join(out, api), { recursive: true });
  const log = run(codegen, ['-config', `scripts/clients/go-${api}.yaml`, '-o', join(out, api, 'client.gen.go'), `generated/${api}/openapi.3.0.yaml`]);
  if (log.trim()) {
    process.stderr.write(log);
    console.error(`oapi-codegen warned on generated/${api}/openapi.3.0.yaml: fix the spec.`);
    process.exit(1);
  }
  console.log(`generated clients/go/${api} (package ${api})`);
}
writeFileSync(join(out, 'go.mod'), `module ${MODULE}\n\ngo 1.24.0\n\nrequire github.com/oapi-codegen/runtime ${RUNTIME}\n`);
run('go', ['mod', 'tidy'], out);
run('go', ['vet', './...'], out);
writeFileSync(stampFile, digest);
console.log(`built module ${MODULE} in clients/go (import ${MODULE}/<api>)`);
