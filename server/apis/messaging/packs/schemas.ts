// Validators for the contract's own schemas (generated/messaging/openapi.3.1.yaml), so pack data
// and the templates a pack fills in are checked against exactly what the API accepts.
import type { ValidateFunction } from 'ajv';
import { componentValidator } from '#server/lib/validation.js';

/** The validator of `components/schemas/<name>` of the Messaging 3.1 document. */
export function contractSchema(name: string): ValidateFunction {
  return componentValidator('messaging', name);
}

/** The first few errors of the last run of `validate`, as `pointer: message`. */
export function schemaErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
    .join('; ');
}
