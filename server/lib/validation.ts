// Request validation the way the contract means it, with JSON Schema 2020-12 as the 3.1
// documents are written, by one Ajv instance: bodies strictly (no coercion; unknown fields
// refused by the schema's `unevaluatedProperties`); path, query and header values first turned
// from their string form into the types their schemas declare (OpenAPI's parameter
// serialization: `?limit=5` is the integer 5, a repeated `?tag=` an array), then validated the
// same way. Data checked against the contract's component schemas (industry packs, automation
// node parameters) is stored as given, so a second instance checks it without filling defaults.
import Ajv2020 from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { components } from '#generated/account/types.js';
import { contractDocument, type ApiName } from '../contract.js';

type InvalidParam = components['schemas']['InvalidParam'];

const OPTIONS = { coerceTypes: false, removeAdditional: false, allErrors: true, strict: false } as const;
/** Requests: a declared `default` fills an absent value, as the contract promises. */
export const ajv = addFormats.default(new Ajv2020.default({ ...OPTIONS, useDefaults: true }));
/** Data kept as given (pack contents, node parameters): checked, never changed. */
export const checker = addFormats.default(new Ajv2020.default({ ...OPTIONS, useDefaults: false }));

// Compiled once per process for each distinct schema: every app built from the same documents
// (tests build many) reuses the validators instead of compiling them again. The set is bounded
// by the contract.
const compiled = new Map<string, ValidateFunction>();

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const key = `${httpPart === 'body' ? 'body' : 'parameters'} ${JSON.stringify(schema)}`;
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = httpPart === 'body' ? ajv.compile(schema as object) : parametersValidator(schema as Schema)));
  return validate;
};

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema };
type Coerce = (value: unknown) => unknown;

/** The validator of a path, query or header object: its values coerced from strings, then checked. */
function parametersValidator(schema: Schema): ValidateFunction {
  const validate = ajv.compile(schema as object);
  const coercers = Object.entries(schema.properties ?? {}).flatMap(([name, property]) => {
    const coerce = coercerOf(property);
    return coerce ? [[name, coerce] as const] : [];
  });
  if (!coercers.length) return validate;
  const wrapped = ((data: Record<string, unknown>) => {
    if (data && typeof data === 'object') {
      for (const [name, coerce] of coercers) if (data[name] !== undefined) data[name] = coerce(data[name]);
    }
    const valid = validate(data);
    wrapped.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return wrapped;
}

const types = (schema: Schema) => [schema.type ?? []].flat();

/** How a parameter's string form becomes its schema's type; undefined when it stays a string. */
function coercerOf(schema: Schema): Coerce | undefined {
  const [type] = types(schema);
  if (type === 'array') {
    const item = schema.items ? coercerOf(schema.items) : undefined;
    return (value) => (Array.isArray(value) ? value : [value]).map((v) => (item ? item(v) : v));
  }
  const scalar = scalarCoercer(type);
  // A scalar parameter sent once per value: a single repetition is the value itself.
  return scalar && ((value) => scalar(Array.isArray(value) && value.length === 1 ? value[0] : value));
}

function scalarCoercer(type: string | undefined): Coerce | undefined {
  const numeric = (value: unknown) => typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value));
  if (type === 'integer') return (value) => (numeric(value) && Number.isInteger(Number(value)) ? Number(value) : value);
  if (type === 'number') return (value) => (numeric(value) ? Number(value) : value);
  if (type === 'boolean') return (value) => (value === 'true' ? true : value === 'false' ? false : value);
  return undefined;
}

const addedDocuments = new Set<ApiName>();

/** The checker of `components/schemas/<name>` of an API's 3.1 document. */
export function componentValidator(api: ApiName, name: string): ValidateFunction {
  const id = `contract:${api}`;
  if (!addedDocuments.has(api)) {
    checker.addSchema(contractDocument(api), id);
    addedDocuments.add(api);
  }
  const validate = checker.getSchema(`${id}#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name} in the ${api} document`);
  return validate;
}

const PART: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Turns Ajv errors into `errors[]` entries with a JSON pointer rooted at the request part. */
/** At most this many errors are listed: a body with thousands of bad fields gets a bounded answer (bad-inputs M6). */
export const MAX_LISTED_ERRORS = 50;

/**
 * Every distinct invalid input, as the client reads it: the errors of the union branch meant,
 * one entry per pointer and detail (Ajv repeats an error once per schema that reports it). Its
 * length is the count the problem's detail gives, never Ajv's raw count.
 */
export function invalidParams(error: { validation?: unknown; validationContext?: string }): InvalidParam[] {
  const part = PART[error.validationContext ?? 'body'] ?? 'body';
  const seen = new Set<string>();
  const out: InvalidParam[] = [];
  for (const e of matchingBranches((error.validation ?? []) as ErrorObject[])) {
    let pointer = `/${part}${e.instancePath}`;
    if (e.keyword === 'required') pointer += `/${escapePointer(String(e.params.missingProperty))}`;
    if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties')
      pointer += `/${escapePointer(String(e.params.additionalProperty ?? e.params.unevaluatedProperty))}`;
    const entry = { pointer, detail: describe(e) };
    const key = `${pointer}\0${entry.detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(entry);
  }
  return out;
}

/**
 * The errors of a discriminated union (`oneOf` by a kind field) from the branch the kind picks:
 * a branch whose own enum refuses the value of one field while another branch accepts it is
 * not the one the client meant, so its errors (and the bare `oneOf` error) are dropped. A schedule
 * bot missing its `schedule` is told that, not also that `keywords` is required. When no branch
 * accepts the kind (an unknown one), every error stays.
 */
export function matchingBranches(list: ErrorObject[]): ErrorObject[] {
  const BRANCH = /^(.*\/oneOf)\/(\d+)\/properties\/([^/]+)\/(?:enum|const)$/;
  const dropped = new Set<string>(); // `<oneOf path>/<branch>/`
  const unions = new Map<string, Map<string, Set<string>>>(); // oneOf path → field → branches refusing it
  for (const e of list) {
    const m = BRANCH.exec(e.schemaPath);
    if (!m || !e.instancePath.endsWith(`/${m[3]}`)) continue;
    const fields = unions.get(m[1]) ?? new Map<string, Set<string>>();
    unions.set(m[1], fields);
    fields.set(m[3], (fields.get(m[3]) ?? new Set()).add(m[2]));
  }
  for (const [path, fields] of unions) {
    const branches = new Set(list.flatMap((e) => (e.schemaPath.startsWith(`${path}/`) ? [e.schemaPath.slice(path.length + 1).split('/')[0]] : [])));
    for (const refusing of fields.values()) {
      // Some branch with errors accepts the field's value: that is the branch meant.
      if ([...branches].some((b) => !refusing.has(b))) for (const b of refusing) dropped.add(`${path}/${b}/`);
    }
  }
  if (!dropped.size) return list;
  const droppedUnions = new Set([...dropped].map((d) => d.replace(/\/\d+\/$/, '')));
  return list.filter((e) => ![...dropped].some((d) => e.schemaPath.startsWith(d)) && !(e.keyword === 'oneOf' && droppedUnions.has(e.schemaPath)));
}

function escapePointer(token: string) {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function describe(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (
    e.keyword === 'additionalProperties' ||
    e.keyword === 'unevaluatedProperties' ||
    (e.keyword === 'not' && /(additional|unevaluated)Properties/.test(e.schemaPath))
  ) {
    return 'is not a known field';
  }
  if (e.keyword === 'enum') return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return e.message ?? 'is invalid';
}
