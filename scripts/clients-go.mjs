#!/usr/bin/env node
// `npm run clients:go`: oapi-codegen (pinned below, installed into .tools/go/bin) generates one
// package per API from generated/<api>/openapi.3.0.yaml (oapi-codegen reads OpenAPI 3.0) into
// clients/go/<api>/ with the config scripts/clients/go-<api>.yaml, under one module
// `chatapp.local/clients` (go.mod written here, runtime pinned), then builds and vets it.
// Any generator output (warnings) fails the run: fix the spec, never the generated code.
// Skips the work when the documents, configs and pins are those of the last run (.stamp).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inputsDigest, isStamped, runOrExit } from './lib/tools.mjs';

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

const inputs = APIS.flatMap((api) => [join(root, 'generated', api, 'openapi.3.0.yaml'), join(root, 'scripts', 'clients', `go-${api}.yaml`)]);
const digest = inputsDigest(`${OAPI_CODEGEN} ${RUNTIME} ${MODULE}`, inputs);
const stampFile = join(out, '.stamp');
if (!force && isStamped(stampFile, digest)) {
  console.log('clients/go is up to date.');
  process.exit(0);
}

const run = (cmd, args, cwd = root) => runOrExit(cmd, args, { cwd, env });

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
