// A form's fields checked before any provider call: names unique and not reserved, options
// exactly where the type takes them, labels within the provider's limits for the component a
// type becomes, and `custom_field` naming a contact attribute or a custom field that exists.
import type { Kysely } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FLOW_LABEL_LIMITS } from '#server/providers/flow-json-check.js';
import type { Database } from '#server/store/schema.js';
import type { FormFieldRow } from '#server/store/schema/forms.js';
import { RESERVED_FIELD_NAMES } from './flow-json.js';

type Field = components['schemas']['FormField'];

const COMPONENT: Record<Field['type'], string> = {
  text: 'TextInput',
  email: 'TextInput',
  phone: 'TextInput',
  number: 'TextInput',
  textarea: 'TextArea',
  date: 'DatePicker',
  dropdown: 'Dropdown',
  radio: 'RadioButtonsGroup',
  checkbox: 'CheckboxGroup',
  opt_in: 'OptIn',
};
const WITH_OPTIONS = new Set<Field['type']>(['dropdown', 'radio', 'checkbox']);
/** Contact attributes a form can fill besides custom fields. */
export const CONTACT_ATTRIBUTES = new Set(['name', 'email']);

export async function checkFields(db: Kysely<Database>, workspaceId: string, fields: Field[]): Promise<FormFieldRow[]> {
  const errors: { pointer: string; detail: string }[] = [];
  const names = new Set<string>();
  const targets = new Map<string, number>();
  const needCustom = new Set<string>();
  fields.forEach((f, i) => {
    const at = `/body/fields/${i}`;
    if (RESERVED_FIELD_NAMES.has(f.name)) errors.push({ pointer: `${at}/name`, detail: `'${f.name}' is reserved` });
    else if (names.has(f.name)) errors.push({ pointer: `${at}/name`, detail: `repeats the name of field ${fields.findIndex((g) => g.name === f.name)}` });
    names.add(f.name);
    if (WITH_OPTIONS.has(f.type) && !f.options) errors.push({ pointer: `${at}/options`, detail: `required for ${f.type} fields` });
    if (!WITH_OPTIONS.has(f.type) && f.options) errors.push({ pointer: `${at}/options`, detail: `not allowed for ${f.type} fields` });
    const ids = new Set<string>();
    (f.options ?? []).forEach((o, j) => {
      if (ids.has(o.id)) errors.push({ pointer: `${at}/options/${j}/id`, detail: 'repeats another option id' });
      ids.add(o.id);
    });
    const limit = FLOW_LABEL_LIMITS[COMPONENT[f.type]]!;
    if ([...f.label].length > limit) errors.push({ pointer: `${at}/label`, detail: `at most ${limit} characters for ${f.type} fields (the provider's limit)` });
    if (f.custom_field) {
      const seen = targets.get(f.custom_field);
      if (seen !== undefined) errors.push({ pointer: `${at}/custom_field`, detail: `field ${seen} already stores into '${f.custom_field}'` });
      targets.set(f.custom_field, i);
      if (!CONTACT_ATTRIBUTES.has(f.custom_field)) needCustom.add(f.custom_field);
    }
  });
  if (needCustom.size) {
    const known = new Set(
      (
        await db
          .selectFrom('custom_fields')
          .select('key')
          .where('workspace_id', '=', workspaceId)
          .where('key', 'in', [...needCustom])
          .execute()
      ).map((r) => r.key),
    );
    fields.forEach((f, i) => {
      if (f.custom_field && needCustom.has(f.custom_field) && !known.has(f.custom_field)) {
        errors.push({ pointer: `/body/fields/${i}/custom_field`, detail: 'is neither name, email nor a custom field of this workspace' });
      }
    });
  }
  if (errors.length) throw new HttpProblem(400, 'validation', 'One or more fields are invalid.', { errors });
  return fields.map((f) => ({
    name: f.name,
    label: f.label,
    type: f.type,
    required: f.required ?? false,
    ...(f.options ? { options: f.options.map((o) => ({ id: o.id, title: o.title })) } : {}),
    ...(f.helper_text ? { helper_text: f.helper_text } : {}),
    ...(f.custom_field ? { custom_field: f.custom_field } : {}),
  }));
}
