// The one builder of a template message, for every sender (the send API, and so automation,
// bots and order webhooks, and the campaign worker): the stored template and the values given for
// it, for one recipient, become the provider's header, body, limited-time offer, button and
// carousel components. Contact-field variables are filled from the recipient's row as literal
// text, never expanded again (bad-inputs J7); media go by URL or by an upload's provider media id.
//
// The values are trusted to fit the template: the send API fits them first (template-fit.ts,
// 422 naming the field), a campaign checks them when it is created (campaigns/validate.ts).
import type { components } from '#generated/messaging/types.js';
import type { MediaRef, TemplateMessage, TemplateParameter, TemplateSendComponent } from '#server/providers/types.js';
import type { TemplateRow } from '../templates/lookup.js';

type S = components['schemas'];
// openapi-typescript writes a property holding a discriminated union as `Omit<Union, "type">`,
// dropping the discriminator; these restore the unions the contract declares.
type MediaCard = Omit<S['TemplateMediaCarouselCardParameter'], 'header'> & { header: S['TemplateCarouselCardHeaderParameter'] };
type Carousel = (Omit<S['TemplateMediaCarouselParameter'], 'cards'> & { cards: MediaCard[] }) | S['TemplateProductCarouselParameter'];
/** The `template` of a send or a campaign: which template, and its values. */
export type TemplateValues = Omit<S['TemplateSendParameters'], 'header' | 'carousel'> & { header?: S['TemplateHeaderParameter']; carousel?: Carousel };
type Variable = S['TemplateVariable'];
type Button = S['TemplateButtonParameter'];
type MediaHeader = { type: 'image' | 'video' | 'document'; media_url?: string; media_id?: string; filename?: string };
type Stored = Record<string, any>;

/** The stored template, as far as the builder reads it. */
export type StoredTemplate = Pick<TemplateRow, 'name' | 'language' | 'category' | 'components'>;

/** What a variable may read of the recipient. */
export interface RecipientFields {
  name: string | null;
  phone: string;
  email: string | null;
  custom_fields: Record<string, unknown> | null;
}

/** Uploaded media ids (`med_…`) → the provider's media id, resolved for the sender number beforehand. */
export type MediaIds = Map<string, string>;

export interface BuiltTemplate {
  message: TemplateMessage;
  /** The body with its values in place, for the inbox preview. */
  text: string | null;
}

/** The recipient's fields: its contact row when there is one, else only the number. */
export function recipientFields(
  contact: { name: string | null; email: string | null; custom_fields?: unknown } | null | undefined,
  phone: string,
): RecipientFields {
  return contact
    ? { name: contact.name, phone, email: contact.email, custom_fields: (contact.custom_fields as Record<string, unknown> | null | undefined) ?? null }
    : { name: null, phone, email: null, custom_fields: null };
}

/** The numbers of the `{{n}}` variables of a text, in order of appearance. */
export function variablesOf(text: string | undefined): number[] {
  return [...(text ?? '').matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => Number(m[1]));
}

/** Fills `{{n}}` once, in one pass: values are never scanned again. */
export function render(text: string, values: string[]): string {
  return text.replace(/\{\{\s*(\d+)\s*\}\}/g, (whole, n: string) => values[Number(n) - 1] ?? whole);
}

/** A variable's text: given literally, or read from the recipient (its fallback when empty). */
export function variableValue(v: Variable, contact: RecipientFields): string {
  if (typeof v === 'string') return v;
  const field = v.from_contact;
  let value: unknown;
  if (field === 'name') value = contact.name;
  else if (field === 'contact_no') value = contact.phone;
  else if (field === 'email') value = contact.email;
  else value = contact.custom_fields?.[field.slice('custom_fields.'.length)];
  return value === null || value === undefined || value === '' ? v.fallback : String(value);
}

/** A media header's parameter. Graph takes `{ id }` for uploaded media where it takes `{ link }` for URLs. */
function mediaParameter(h: MediaHeader, uploads: MediaIds): TemplateParameter {
  const ref: MediaRef = h.media_id ? { id: uploads.get(h.media_id)! } : { link: h.media_url! };
  if (h.type === 'document') return { type: 'document', document: { ...ref, ...(h.filename ? { filename: h.filename } : {}) } };
  return h.type === 'image' ? { type: 'image', image: ref } : { type: 'video', video: ref };
}

function bodyComponents(values: Variable[] | undefined, contact: RecipientFields): TemplateSendComponent[] {
  return values?.length ? [{ type: 'body', parameters: values.map((v) => ({ type: 'text', text: variableValue(v, contact) })) }] : [];
}

function buttonComponents(list: Button[] | undefined, contact: RecipientFields): TemplateSendComponent[] {
  return (list ?? []).map((b): TemplateSendComponent => {
    switch (b.type) {
      case 'quick_reply':
        return { type: 'button', sub_type: 'quick_reply', index: b.index, parameters: [{ type: 'payload', payload: b.payload }] };
      case 'url':
        // Graph appends the text to the button's URL as it is: the value is one URL-encoded suffix
        // (the contract: "URL-encoded by us"), so a space or `/` in a contact field stays in it.
        return { type: 'button', sub_type: 'url', index: b.index, parameters: [{ type: 'text', text: encodeURIComponent(variableValue(b.text, contact)) }] };
      case 'copy_code':
        return { type: 'button', sub_type: 'copy_code', index: b.index, parameters: [{ type: 'coupon_code', coupon_code: b.coupon_code }] };
      case 'flow':
        return { type: 'button', sub_type: 'flow', index: b.index, parameters: [{ type: 'action', action: b.flow_token ? { flow_token: b.flow_token } : {} }] };
      case 'catalog':
        return {
          type: 'button',
          sub_type: 'catalog',
          index: b.index,
          parameters: [{ type: 'action', action: b.thumbnail_product_retailer_id ? { thumbnail_product_retailer_id: b.thumbnail_product_retailer_id } : {} }],
        };
    }
  });
}

function carouselComponent(carousel: Carousel, contact: RecipientFields, uploads: MediaIds): TemplateSendComponent {
  if (carousel.type === 'media') {
    const cards = carousel.cards.map((card, i) => ({
      card_index: i,
      components: [
        { type: 'header' as const, parameters: [mediaParameter(card.header, uploads)] },
        ...bodyComponents(card.body, contact),
        ...buttonComponents(card.buttons, contact),
      ],
    }));
    return { type: 'carousel', cards };
  }
  // Product cards carry the provider's catalog ids (the campaign's send context resolves ours).
  const cards = carousel.cards.map((card, i) => ({
    card_index: i,
    components: [
      {
        type: 'header' as const,
        // Graph's product card header; our TemplateParameter union does not list it.
        parameters: [
          { type: 'product', product: { product_retailer_id: card.product_retailer_id, catalog_id: card.catalog_id } } as unknown as TemplateParameter,
        ],
      },
    ],
  }));
  return { type: 'carousel', cards };
}

const storedComponent = (template: StoredTemplate, type: string): Stored | undefined =>
  (Array.isArray(template.components) ? (template.components as Stored[]) : []).find((c) => c.type === type);

/** An authentication template's OTP button: Meta sends the code as the URL button's parameter. */
function hasOtpButton(template: StoredTemplate): boolean {
  if (template.category !== 'AUTHENTICATION') return false;
  return ((storedComponent(template, 'BUTTONS')?.buttons ?? []) as Stored[]).some((b) => b.type === 'OTP');
}

/** The template message for one recipient, and its body as the inbox shows it. */
export function templateMessage(template: StoredTemplate, values: TemplateValues, contact: RecipientFields, uploads: MediaIds = new Map()): BuiltTemplate {
  const out: TemplateSendComponent[] = [];
  if (values.header) {
    out.push(
      values.header.type === 'text'
        ? { type: 'header', parameters: [{ type: 'text', text: variableValue(values.header.text, contact) }] }
        : { type: 'header', parameters: [mediaParameter(values.header, uploads)] },
    );
  }
  const bodyTexts = (values.body ?? []).map((v) => variableValue(v, contact));
  if (bodyTexts.length) out.push({ type: 'body', parameters: bodyTexts.map((text) => ({ type: 'text', text })) });
  if (values.limited_time_offer) {
    out.push({
      type: 'limited_time_offer',
      parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: Date.parse(values.limited_time_offer.expires_at) } }],
    });
  }
  out.push(...buttonComponents(values.buttons, contact));
  // The code is the body's one value; the OTP button repeats it.
  if (bodyTexts.length && hasOtpButton(template)) out.push({ type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: bodyTexts[0]! }] });
  if (values.carousel) out.push(carouselComponent(values.carousel, contact, uploads));
  const body = storedComponent(template, 'BODY');
  return {
    message: { name: template.name, language: { code: template.language, policy: 'deterministic' }, ...(out.length ? { components: out } : {}) },
    text: body?.text ? render(body.text, bodyTexts) : null,
  };
}

/** What `messages.content` keeps of a template message (with its body text when known). */
export function templateContent(template: { id: string | null; name: string; language: string }, text: string | null): Record<string, unknown> {
  return { template: { name: template.name, language: template.language, template_id: template.id }, ...(text ? { text } : {}) };
}

/** The provider's caps on a template message as the customer reads it (characters). */
export const TEMPLATE_LIMITS = { body: 1024, headerText: 60, buttonUrl: 2000 } as const;

const length = (s: string) => Array.from(s).length;

/**
 * Where a built template message exceeds the provider's caps once its values are in place (the
 * provider refuses it, code 132005 or 131008): the body over 1,024 characters, a text header over
 * 60, a URL button's address over 2,000. The pointer is relative to the template values.
 */
export function renderedOverflow(template: StoredTemplate, built: BuiltTemplate): { pointer: string; detail: string } | null {
  if (built.text !== null && length(built.text) > TEMPLATE_LIMITS.body) {
    return {
      pointer: '/body',
      detail: `The template body with its values is ${length(built.text)} characters; the provider takes at most ${TEMPLATE_LIMITS.body}.`,
    };
  }
  for (const c of built.message.components ?? []) {
    if (c.type === 'header') {
      const p = c.parameters[0];
      const stored = storedComponent(template, 'HEADER');
      if (p?.type === 'text' && typeof stored?.text === 'string') {
        const text = render(stored.text, [p.text]);
        if (length(text) > TEMPLATE_LIMITS.headerText)
          return {
            pointer: '/header/text',
            detail: `The template header with its value is ${length(text)} characters; the provider takes at most ${TEMPLATE_LIMITS.headerText}.`,
          };
      }
    }
    if (c.type === 'button' && c.sub_type === 'url') {
      const p = c.parameters[0];
      const stored = ((storedComponent(template, 'BUTTONS')?.buttons ?? []) as Stored[])[Number(c.index)];
      if (p?.type === 'text' && typeof stored?.url === 'string') {
        const url = render(stored.url, [p.text]);
        if (length(url) > TEMPLATE_LIMITS.buttonUrl)
          return {
            pointer: '/buttons',
            detail: `The URL of button ${c.index} with its value is ${length(url)} characters; the provider takes at most ${TEMPLATE_LIMITS.buttonUrl}.`,
          };
      }
    }
  }
  return null;
}
