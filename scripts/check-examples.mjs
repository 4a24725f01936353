#!/usr/bin/env node
// Validates every example in OpenAPI 3.0 and 3.1 documents against the schema it illustrates
// (parameters, request bodies, responses, response headers, webhooks; shared examples through
// their `$ref`), and reports operations that lack a success or an error example, and error
// responses without one. Usage: node scripts/check-examples.mjs <openapi document>...
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createValidator } from './lib/ajv.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

export function checkExamples(document) {
  const doc = String(document.openapi).startsWith('3.0') ? from30(document) : document;
  const validate = createValidator(doc);
  const problems = [];
  const check = (where, schema, examples) => {
    for (const [name, ex] of Object.entries(examples ?? {})) {
      if (!schema) continue;
      const example = ex.$ref ? resolve(doc, ex.$ref) : ex;
      if (example === undefined) {
        problems.push(`${where} example "${name}": dangling ${ex.$ref}`);
        continue;
      }
      const errors = validate(schema, example.value);
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
            if (!n && label === 'path' && /^[45]\d\d$/.test(status)) problems.push(`${where} response ${status} ${type}: no example`);
            check(`${where} response ${status} ${type}`, media.schema, media.examples);
          }
          for (const [name, header] of Object.entries(res.headers ?? {})) {
            if (header.example !== undefined) check(`${where} response ${status} header ${name}`, header.schema, { example: { value: header.example } });
          }
          // A body with no content, or a file (JSON cannot hold its bytes), has no example to give.
          if ((!res.content || Object.values(res.content).every(isFile)) && /^[23]/.test(status)) success = true;
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

/** A file body: 3.1 `contentMediaType`, 3.0 `format: binary`. */
function isFile(media) {
  return typeof media.schema?.contentMediaType === 'string' || media.schema?.format === 'binary';
}

function resolve(doc, ref) {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

/** A 3.0 document's schemas in 3.1 terms: `nullable: true` becomes a `null` in `type`. */
function from30(doc) {
  const visit = (node) => {
    if (Array.isArray(node)) return node.map(visit);
    if (!node || typeof node !== 'object') return node;
    const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, visit(v)]));
    if (out.nullable === true) {
      delete out.nullable;
      if (typeof out.type === 'string') out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    }
    return out;
  };
  return visit(doc);
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
