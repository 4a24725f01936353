// Custom field values checked against their field definitions: text (≤ 1,000 characters),
// number (finite), date (a real calendar day), choice (one of the field's choices).
import { HttpProblem } from '#server/lib/problems.js';
import type { CustomFieldValue } from '#server/store/schema/messaging-crm.js';
import { isCalendarDate, type FieldDefinitions } from './segment-filter.js';

export const MAX_TEXT_VALUE = 1000;

export { loadFieldDefinitions } from './segment-filter.js';

/**
 * `current` with `changes` merged in (`null` removes a key). 422 naming each bad key
 * (`/body/custom_fields/<key>`); keys are looked up in the definitions only, so `__proto__`
 * or `constructor` can never reach an object's prototype (bad-inputs J6).
 */
export function mergeCustomValues(
  current: Record<string, CustomFieldValue>,
  changes: Record<string, string | number | null>,
  fields: FieldDefinitions,
  pointer = '/body/custom_fields',
): Record<string, CustomFieldValue> {
  const merged = new Map<string, CustomFieldValue>(Object.entries(current));
  const errors: { pointer: string; detail: string }[] = [];
  for (const [key, value] of Object.entries(changes)) {
    const at = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    const field = fields.get(key);
    if (!field) {
      errors.push({ pointer: at, detail: 'is not a custom field of this workspace' });
      continue;
    }
    if (value === null) {
      merged.delete(key);
      continue;
    }
    const problem = valueProblem(field.type, field.options, value);
    if (problem) errors.push({ pointer: at, detail: problem });
    else merged.set(key, value);
  }
  if (errors.length) {
    throw new HttpProblem(
      422,
      'unprocessable',
      errors.length === 1 ? `custom field ${errors[0]!.pointer.split('/').pop()}: ${errors[0]!.detail}.` : `${errors.length} custom field values are invalid.`,
      { errors },
    );
  }
  return Object.fromEntries(merged);
}

function valueProblem(type: string, options: string[] | null, value: string | number): string | null {
  switch (type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number';
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? null : 'must be a date YYYY-MM-DD';
    case 'choice':
      return typeof value === 'string' && (options ?? []).includes(value) ? null : `not one of the field's choices (${(options ?? []).join(', ')})`;
    default:
      if (typeof value !== 'string') return 'must be a string';
      return value.length <= MAX_TEXT_VALUE ? null : `must be at most ${MAX_TEXT_VALUE} characters`;
  }
}
