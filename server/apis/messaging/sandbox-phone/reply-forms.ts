// The sandbox phone's controls under a received interactive message: one button per reply button,
// a choice of the list's rows, or the form's fields (a WhatsApp Flow) with a submit button. Plain
// HTML forms posting to REPLY_PATH with the CSRF token, as the rest of the page. Form answers are
// posted as `f_<field name>` so they cannot clash with the post's own fields.
import { SANDBOX_PHONE_PATH } from '#server/html/demo-layout.js';
import { csrfField, formField, formFields, hiddenFields } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import type { FormFieldRow } from '#server/store/schema/forms.js';
import type { Offer, SandboxReply } from './replies.js';

export const REPLY_PATH = `${SANDBOX_PHONE_PATH}/reply`;
const ANSWER_PREFIX = 'f_';

function fieldControl(field: FormFieldRow, messageId: string): Html {
  const name = `${ANSWER_PREFIX}${field.name}`;
  const id = `${messageId}-${name}`;
  const required = field.required ? html` required` : '';
  const options = field.options ?? [];
  switch (field.type) {
    case 'textarea':
      return html`<label for="${id}">${field.label}</label><textarea id="${id}" name="${name}" maxlength="4096"${required}></textarea>`;
    case 'dropdown':
      return html`<label for="${id}">${field.label}</label><select id="${id}" name="${name}"${required}><option value=""></option>${options.map((o) => html`<option value="${o.id}">${o.title}</option>`)}</select>`;
    case 'radio':
    case 'checkbox':
      return html`<fieldset><legend>${field.label}</legend>${options.map(
        (o) => html`<label><input type="${field.type}" name="${name}" value="${o.id}"> ${o.title}</label>`,
      )}</fieldset>`;
    case 'opt_in':
      return html`<label><input type="checkbox" name="${name}" value="yes"${required}> ${field.label}</label>`;
    default: {
      const type = { email: 'email', phone: 'tel', number: 'text', date: 'date' }[field.type as string] ?? 'text';
      return html`<label for="${id}">${field.label}</label><input id="${id}" name="${name}" type="${type}" maxlength="4096"${required}>`;
    }
  }
}

/** The controls of one received message that offers something to tap or fill in. */
export function offerControls(offer: Offer, context: { messageId: string; to: string; from: string; csrf: string }): Html {
  const hidden = html`${csrfField(context.csrf)}${hiddenFields({ to: context.to, from: context.from, message_id: context.messageId, kind: offer.kind })}`;
  if (offer.kind === 'button')
    return html`<div class="reply-buttons">${offer.options.map(
      (o) => html`<form method="post" action="${REPLY_PATH}">${hidden}${hiddenFields({ option: o.id })}<button type="submit">${o.title}</button></form>`,
    )}</div>`;
  if (offer.kind === 'list')
    return html`<form method="post" action="${REPLY_PATH}" class="reply-list">${hidden}<fieldset><legend>${offer.button}</legend>${offer.options.map(
      (o) =>
        html`<label><input type="radio" name="option" value="${o.id}" required> ${o.title}${o.description ? html` <small>${o.description}</small>` : ''}</label>`,
    )}</fieldset><button type="submit">Send</button></form>`;
  return html`<details class="reply-form"><summary>${offer.cta}</summary><form method="post" action="${REPLY_PATH}">${hidden}${offer.fields.map((f) => fieldControl(f, context.messageId))}<button type="submit">Submit</button></form></details>`;
}

/** The reply a posted form asks for, or null when it is malformed. */
export function postedReply(body: unknown): SandboxReply | null {
  const messageId = formField(body, 'message_id').slice(0, 64);
  const kind = formField(body, 'kind');
  if (!messageId) return null;
  if (kind === 'button' || kind === 'list') {
    const optionId = formField(body, 'option').slice(0, 256);
    return optionId ? { kind, messageId, optionId } : null;
  }
  if (kind !== 'form') return null;
  const answers: Record<string, string[]> = {};
  for (const key of Object.keys(body && typeof body === 'object' ? body : {}))
    if (key.startsWith(ANSWER_PREFIX)) answers[key.slice(ANSWER_PREFIX.length)] = formFields(body, key).map((v) => v.slice(0, 4096));
  return { kind, messageId, answers };
}
