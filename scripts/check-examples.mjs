#!/usr/bin/env node
// Validates every example in OpenAPI 3.1 documents against the schema it illustrates
// (parameters, request bodies, responses, webhooks), and reports operations that lack a
// success or an error example. Usage: node scripts/check-examples.mjs <openapi.3.1.yaml>...
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createValidator } from './lib/ajv.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

export function checkExamples(doc) {
  const validate = createValidator(doc);
  const problems = [];
  const check = (where, schema, examples) => {
    for (const [name, ex] of Object.entries(examples ?? {})) {
      if (!schema) continue;
      const errors = validate(schema, ex.value);
      if (errors) problems.push(`${where} example "${name}": ${errors}`);
    }
  };
  const walk = (label, pathItems) => {
    for (const [path, item] of Object.entries(pathItems ?? {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const where = `${label} ${method.toUpperCase()} ${path} (${op.operationId})`;
        for (const p of op.parameters ?? []) {
          const param = p.$ref ? resolve(doc, p.$ref) : p;
          check(`${where} parameter ${param.name}`, param.schema, param.examples);
        }
        for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
          check(`${where} request ${type}`, media.schema, media.examples);
        }
        let success = false;
        let failure = false;
        for (const [status, res] of Object.entries(op.responses ?? {})) {
          for (const [type, media] of Object.entries(res.content ?? {})) {
            const n = Object.keys(media.examples ?? {}).length;
            if (n && status.startsWith('2')) success = true;
            if (n && /^[45]/.test(status)) failure = true;
            check(`${where} response ${status} ${type}`, media.schema, media.examples);
          }
          if (!res.content && /^[23]/.test(status)) success = true;
        }
        if (label === 'path' && !success) problems.push(`${where}: no success example`);
        if (label === 'path' && !failure) problems.push(`${where}: no error example`);
      }
    }
  };
  walk('path', doc.paths);
  walk('webhook', doc.webhooks);
  return problems;
}

function resolve(doc, ref) {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let failed = 0;
  for (const file of process.argv.slice(2)) {
    const problems = checkExamples(parse(readFileSync(file, 'utf8')));
    for (const p of problems) console.log(`${file}: ${p}`);
    failed += problems.length;
    if (!problems.length) console.log(`${file}: every example is valid`);
  }
  process.exit(failed ? 1 : 0);
}
