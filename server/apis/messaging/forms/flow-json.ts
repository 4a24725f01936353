// A form's fields as WhatsApp Flow JSON: screens of up to FIELDS_PER_SCREEN fields, each
// carrying the answers so far to the next one (as `data`), the last one completing the Flow
// with every answer plus `form_id`. The provider does not say which Flow a response belongs to
// (`nfm_reply` has no Flow id), so `form_id` in the completion payload is how submissions find
// their form, whoever sent the Flow and whatever `flow_token` they chose.
import type { FormFieldRow } from '#server/store/schema/forms.js';

export const FLOW_JSON_VERSION = '7.0';
/** Short screens read better on a phone and stay far below the provider's 50 components. */
export const FIELDS_PER_SCREEN = 8;
/** Keys of the completion payload that fields cannot use. */
export const RESERVED_FIELD_NAMES = new Set(['form_id', 'flow_token']);

export interface FlowForm {
  id: string;
  title: string;
  submit_label: string;
  fields: FormFieldRow[];
}

type Json = Record<string, unknown>;

function component(f: FormFieldRow): Json[] {
  const common: Json = { name: f.name, label: f.label, required: f.required };
  const helper = f.helper_text ? { 'helper-text': f.helper_text } : {};
  const caption = f.helper_text ? [{ type: 'TextCaption', text: f.helper_text }] : [];
  const source = { 'data-source': (f.options ?? []).map((o) => ({ id: o.id, title: o.title })) };
  switch (f.type) {
    case 'text':
    case 'email':
    case 'phone':
    case 'number':
      return [{ type: 'TextInput', ...common, 'input-type': f.type, ...helper }];
    case 'textarea':
      return [{ type: 'TextArea', ...common, ...helper }];
    case 'date':
      return [{ type: 'DatePicker', ...common, ...helper }];
    case 'dropdown':
      return [...caption, { type: 'Dropdown', ...common, ...source }];
    case 'radio':
      return [...caption, { type: 'RadioButtonsGroup', ...common, ...source }];
    case 'checkbox':
      return [...caption, { type: 'CheckboxGroup', ...common, ...source }];
    case 'opt_in':
      return [...caption, { type: 'OptIn', ...common }];
  }
}

/** The type of an answer as screen `data` declares it. */
function dataType(f: FormFieldRow): Json {
  if (f.type === 'checkbox') return { type: 'array', items: { type: 'string' }, __example__: [] };
  if (f.type === 'opt_in') return { type: 'boolean', __example__: false };
  return { type: 'string', __example__: '' };
}

const screenId = (i: number) => `STEP_${String.fromCharCode(65 + i)}`;

/** The screen a form opens on: a Flow message names it in `flow_action_payload.screen`. */
export const FIRST_SCREEN = screenId(0);

export function buildFlowJson(form: FlowForm): string {
  const chunks: FormFieldRow[][] = [];
  for (let i = 0; i < form.fields.length; i += FIELDS_PER_SCREEN) chunks.push(form.fields.slice(i, i + FIELDS_PER_SCREEN));
  const screens = chunks.map((fields, i) => {
    const earlier = chunks.slice(0, i).flat();
    const last = i === chunks.length - 1;
    const carried: Json = {
      ...Object.fromEntries(earlier.map((f) => [f.name, `\${data.${f.name}}`])),
      ...Object.fromEntries(fields.map((f) => [f.name, `\${form.${f.name}}`])),
    };
    const action = last
      ? { name: 'complete', payload: { ...carried, form_id: form.id } }
      : { name: 'navigate', next: { type: 'screen', name: screenId(i + 1) }, payload: carried };
    return {
      id: screenId(i),
      title: form.title,
      ...(last ? { terminal: true, success: true } : {}),
      ...(earlier.length ? { data: Object.fromEntries(earlier.map((f) => [f.name, dataType(f)])) } : {}),
      layout: {
        type: 'SingleColumnLayout',
        children: [
          {
            type: 'Form',
            name: 'form',
            children: [...fields.flatMap(component), { type: 'Footer', label: last ? form.submit_label : 'Continue', 'on-click-action': action }],
          },
        ],
      },
    };
  });
  return JSON.stringify({ version: FLOW_JSON_VERSION, screens });
}
