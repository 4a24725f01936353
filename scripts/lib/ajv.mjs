// An Ajv 2020-12 validator over one OpenAPI 3.1 document, resolving its `#/components/...` refs.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export function createAjv() {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

/** Returns validate(schema, value) → null when valid, else a one-line error summary. */
export function createValidator(doc) {
  const ajv = createAjv();
  ajv.addSchema({ ...doc, $id: 'openapi.json' }, 'openapi.json');
  const cache = new Map();
  return (schema, value) => {
    const key = JSON.stringify(schema);
    let fn = cache.get(key);
    if (!fn) {
      fn = ajv.compile(rebase(schema));
      cache.set(key, fn);
    }
    if (fn(value)) return null;
    return fn.errors.map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
  };
}

// `#/components/...` inside a standalone schema must point into the document.
function rebase(node) {
  if (Array.isArray(node)) return node.map(rebase);
  if (node && typeof node === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `openapi.json${v}` : rebase(v);
    }
    return out;
  }
  return node;
}
