// Validators for the contract's own schemas (generated/messaging/openapi.3.1.yaml), so pack data
// and the templates a pack fills in are checked against exactly what the API accepts.
import Ajv2020 from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { contractDocument } from '../../../contract.js';

const DOCUMENT = 'messaging-3.1';
let ajv: InstanceType<typeof Ajv2020.default> | undefined;
const compiled = new Map<string, ValidateFunction>();

/** The validator of `components/schemas/<name>` of the Messaging 3.1 document. */
export function contractSchema(name: string): ValidateFunction {
  let validate = compiled.get(name);
  if (validate) return validate;
  if (!ajv) {
    ajv = new Ajv2020.default({ strict: false, allErrors: true, coerceTypes: false, useDefaults: false });
    addFormats.default(ajv);
    const doc = contractDocument('messaging');
    ajv.addSchema(doc, DOCUMENT);
  }
  validate = ajv.getSchema(`${DOCUMENT}#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name} in the Messaging document`);
  compiled.set(name, validate);
  return validate;
}

/** The first few errors of the last run of `validate`, as `pointer: message`. */
export function schemaErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
    .join('; ');
}
