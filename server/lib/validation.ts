// Request validation the way the contract means it, with JSON Schema 2020-12 as the 3.1
// documents are written: bodies strictly (no coercion; unknown fields refused by the schema's
// `unevaluatedProperties`), path/query/header values coerced from their string form.
import Ajv2020 from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { components } from '../../generated/account/types.js';

type InvalidParam = components['schemas']['InvalidParam'];

function makeAjv(coerce: boolean) {
  const ajv = new Ajv2020.default({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

const strict = makeAjv(false);
const coercing = makeAjv(true);

// Compiled once per process for each distinct schema: every app built from the same documents
// (tests build many) reuses the validators instead of compiling them again. Keyed by content,
// as each app's routes hold their own copies of the schemas; the set is bounded by the contract.
const compiled = new Map<string, ValidateFunction>();

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const body = httpPart === 'body';
  const key = `${body ? 'body' : 'coerced'} ${JSON.stringify(schema)}`;
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = (body ? strict : coercing).compile(schema as object)));
  return validate;
};

const PART: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Turns Ajv errors into `errors[]` entries with a JSON pointer rooted at the request part. */
/** At most this many errors are listed: a body with thousands of bad fields gets a bounded answer (catalogue M6). */
export const MAX_LISTED_ERRORS = 50;

export function toInvalidParams(error: { validation?: unknown; validationContext?: string }): InvalidParam[] {
  const part = PART[error.validationContext ?? 'body'] ?? 'body';
  const list = (error.validation ?? []) as ErrorObject[];
  return list.slice(0, MAX_LISTED_ERRORS).map((e) => {
    let pointer = `/${part}${e.instancePath}`;
    if (e.keyword === 'required') pointer += `/${escape(String(e.params.missingProperty))}`;
    if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') pointer += `/${escape(String(e.params.additionalProperty ?? e.params.unevaluatedProperty))}`;
    return { pointer, detail: describe(e) };
  });
}

function escape(token: string) {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function describe(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties' || (e.keyword === 'not' && /(additional|unevaluated)Properties/.test(e.schemaPath))) {
    return 'is not a known field';
  }
  if (e.keyword === 'enum') return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return e.message ?? 'is invalid';
}
