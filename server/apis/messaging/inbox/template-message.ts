// An approved template and the values a send gives for it, turned into the provider's template
// message. Values must fit the template as stored: as many body values as variables, a header of
// the template's format, a value for each dynamic button (422 naming the field otherwise).
// Values are inserted once, as literal text: `{{1}}` or `${…}` inside a value is never expanded (J7).
// Uploaded media (`media_id`) are sent by the provider's media id, resolved by the caller for the
// sender number (templates/uploaded-media.ts).
import type { components } from '../../../../generated/messaging/types.js';
import { HttpProblem } from '../../../lib/problems.js';
import type { TemplateMessage, TemplateParameter, TemplateSendComponent } from '../../../providers/types.js';
import type { TemplateRow } from '../templates/lookup.js';
import type { UploadedMediaIds } from '../templates/uploaded-media.js';

type S = components['schemas'];
type Variable = S['TemplateVariable'];
type HeaderParam = { type: 'text' | 'image' | 'video' | 'document'; text?: Variable; media_url?: string; media_id?: string; filename?: string };
type Stored = Record<string, any>;

export interface RecipientFields {
  name: string | null;
  phone: string;
  email: string | null;
  custom_fields: Record<string, unknown> | null;
}

export interface BuiltTemplate {
  message: TemplateMessage;
  /** The body with its values in place, for the inbox preview. */
  text: string | null;
  /** Every media URL the message makes the provider fetch, with its JSON pointer (checked by the caller). */
  mediaUrls: { url: string; pointer: string }[];
}

const P = '/body/template';
const unprocessable = (pointer: string, detail: string) => new HttpProblem(422, 'unprocessable', detail, { errors: [{ pointer, detail }] });
const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail }] });

/** A header's media: a URL the provider fetches, or an upload by the provider's id (Graph's `{ id }`). */
function mediaRef(given: { media_url?: string; media_id?: string }, uploads: UploadedMediaIds, pointer: string): { link: string } | { id: string } {
  if ((given.media_url === undefined) === (given.media_id === undefined)) throw invalid(pointer, 'Give exactly one of media_url and media_id.');
  if (given.media_id === undefined) return { link: given.media_url! };
  const id = uploads.get(given.media_id);
  // The caller resolves every media_id first; a missing one would otherwise be sent as undefined.
  if (!id) throw unprocessable(`${pointer}/media_id`, `media_id ${given.media_id} was not resolved for this sender.`);
  return { id };
}

/** The numbers of the `{{n}}` variables of a text, in order of appearance. */
export function variablesOf(text: string | undefined): number[] {
  return [...(text ?? '').matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => Number(m[1]));
}

/** Fills `{{n}}` once, in one pass: values are never scanned again. */
export function render(text: string, values: string[]): string {
  return text.replace(/\{\{\s*(\d+)\s*\}\}/g, (whole, n: string) => values[Number(n) - 1] ?? whole);
}

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

export function buildTemplateMessage(
  template: TemplateRow,
  values: S['TemplateSendParameters'],
  contact: RecipientFields,
  shorthand: { mediaUrl?: string; filename?: string },
  now: Date,
  uploads: UploadedMediaIds = new Map(),
): BuiltTemplate {
  const stored = (template.components ?? []) as Stored[];
  const find = (type: string) => stored.find((c) => c.type === type);
  const components: TemplateSendComponent[] = [];
  const mediaUrls: BuiltTemplate['mediaUrls'] = [];
  const text = (v: Variable): TemplateParameter => ({ type: 'text', text: variableValue(v, contact) });

  // ---- header
  const header = find('HEADER');
  const given = values.header as HeaderParam | undefined;
  if (given && shorthand.mediaUrl) throw unprocessable('/body/mediaUrl', 'Give the header media either as mediaUrl or as template.header, not both.');
  if (!header && (given || shorthand.mediaUrl)) throw unprocessable(given ? `${P}/header` : '/body/mediaUrl', 'The template has no header.');
  if (header?.format === 'TEXT') {
    const vars = variablesOf(header.text);
    if (vars.length && given?.type !== 'text') throw unprocessable(`${P}/header`, 'The template header has a variable: give header {type: "text", text}.');
    if (!vars.length && given) throw unprocessable(`${P}/header`, 'The template header has no variable.');
    if (vars.length && given?.text !== undefined) components.push({ type: 'header', parameters: [text(given.text)] });
  } else if (header && ['IMAGE', 'VIDEO', 'DOCUMENT'].includes(header.format)) {
    const kind = header.format.toLowerCase() as 'image' | 'video' | 'document';
    if (given && given.type !== kind) throw unprocessable(`${P}/header/type`, `The template header is ${kind}.`);
    let media: { link: string } | { id: string };
    if (given) {
      media = mediaRef(given, uploads, `${P}/header`);
      if (given.media_url) mediaUrls.push({ url: given.media_url, pointer: `${P}/header/media_url` });
    } else {
      // Without a per-message file the sample submitted with the template is sent.
      const link = shorthand.mediaUrl ?? (header.header_url as string | undefined);
      if (!link) throw unprocessable('/body/mediaUrl', `The template has a ${kind} header: give mediaUrl or template.header.`);
      if (shorthand.mediaUrl) mediaUrls.push({ url: link, pointer: '/body/mediaUrl' });
      media = { link };
    }
    const filename = given?.filename ?? shorthand.filename;
    const param: TemplateParameter =
      kind === 'document' ? { type: 'document', document: { ...media, ...(filename ? { filename } : {}) } } : kind === 'image' ? { type: 'image', image: media } : { type: 'video', video: media };
    components.push({ type: 'header', parameters: [param] });
  } else if (header?.format === 'LOCATION') {
    throw unprocessable(`${P}/header`, 'Templates with a location header cannot be sent through this API yet.');
  }

  // ---- body
  const body = find('BODY');
  // Authentication bodies are written by the provider around one variable: the code.
  const otp = template.category === 'AUTHENTICATION';
  const vars = otp ? [1] : variablesOf(body?.text);
  const bodyValues = values.body ?? [];
  if (bodyValues.length !== vars.length) {
    throw unprocessable(`${P}/body`, `The template body has ${vars.length} variable(s); ${bodyValues.length} value(s) were given.`);
  }
  const bodyTexts = bodyValues.map((v) => variableValue(v, contact));
  if (bodyTexts.length) components.push({ type: 'body', parameters: bodyTexts.map((t) => ({ type: 'text', text: t })) });

  // ---- limited-time offer
  const lto = find('LIMITED_TIME_OFFER');
  if (values.limited_time_offer && !lto?.limited_time_offer?.has_expiration) {
    throw unprocessable(`${P}/limited_time_offer`, 'The template has no limited-time offer with an expiry.');
  }
  if (lto?.limited_time_offer?.has_expiration) {
    const at = values.limited_time_offer ? new Date(values.limited_time_offer.expires_at) : null;
    if (!at) throw unprocessable(`${P}/limited_time_offer`, 'The offer has an expiry: give limited_time_offer.expires_at.');
    if (at.getTime() <= now.getTime()) throw unprocessable(`${P}/limited_time_offer/expires_at`, 'expires_at must be in the future.');
    components.push({ type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: at.getTime() } }] });
  }

  // ---- buttons
  const buttons = (find('BUTTONS')?.buttons ?? []) as Stored[];
  components.push(...buttonComponents(buttons, values.buttons ?? [], contact, `${P}/buttons`));
  // The OTP button carries the code too (Meta sends it as the URL button's parameter).
  if (otp && buttons.some((b) => b.type === 'OTP')) components.push({ type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: bodyTexts[0] }] });

  // ---- carousel
  const carousel = find('CAROUSEL');
  if (values.carousel && !carousel) throw unprocessable(`${P}/carousel`, 'The template has no carousel.');
  if (carousel) {
    const c = values.carousel as { type?: string; cards?: any[] } | undefined;
    if (!c || c.type !== 'media') throw unprocessable(`${P}/carousel`, 'The template is a media carousel: give carousel {type: "media", cards}.');
    const cards = carousel.cards as Stored[];
    if (c.cards!.length !== cards.length) throw unprocessable(`${P}/carousel/cards`, `The template has ${cards.length} cards; ${c.cards!.length} were given.`);
    components.push({
      type: 'carousel',
      cards: cards.map((card, i) => {
        const given = c.cards![i];
        const ptr = `${P}/carousel/cards/${i}`;
        const h = (card.components as Stored[]).find((x) => x.type === 'HEADER');
        const kind = String(h?.format ?? 'IMAGE').toLowerCase();
        if (given.header?.type !== kind) throw unprocessable(`${ptr}/header/type`, `Card ${i + 1} has a ${kind} header.`);
        const cardMedia = mediaRef(given.header, uploads, `${ptr}/header`);
        if (given.header.media_url) mediaUrls.push({ url: given.header.media_url, pointer: `${ptr}/header/media_url` });
        const cardVars = variablesOf((card.components as Stored[]).find((x) => x.type === 'BODY')?.text);
        const cardBody = (given.body ?? []) as Variable[];
        if (cardBody.length !== cardVars.length) throw unprocessable(`${ptr}/body`, `Card ${i + 1} has ${cardVars.length} variable(s); ${cardBody.length} value(s) were given.`);
        const parts: TemplateSendComponent[] = [
          { type: 'header', parameters: [kind === 'video' ? { type: 'video', video: cardMedia } : { type: 'image', image: cardMedia }] },
        ];
        if (cardBody.length) parts.push({ type: 'body', parameters: cardBody.map(text) });
        const cardButtons = ((card.components as Stored[]).find((x) => x.type === 'BUTTONS')?.buttons ?? []) as Stored[];
        parts.push(...buttonComponents(cardButtons, given.buttons ?? [], contact, `${ptr}/buttons`));
        return { card_index: i, components: parts };
      }),
    });
  }

  return {
    message: { name: template.name, language: { code: template.language, policy: 'deterministic' }, ...(components.length ? { components } : {}) },
    text: body?.text ? render(body.text, bodyTexts) : null,
    mediaUrls,
  };
}

function buttonComponents(buttons: Stored[], given: S['TemplateButtonParameter'][], contact: RecipientFields, pointer: string): TemplateSendComponent[] {
  const out: TemplateSendComponent[] = [];
  const seen = new Set<number>();
  given.forEach((g, i) => {
    const ptr = `${pointer}/${i}`;
    const button = buttons[g.index];
    if (seen.has(g.index)) throw unprocessable(`${ptr}/index`, `Button ${g.index} has two values.`);
    seen.add(g.index);
    const expected: Record<string, string> = { quick_reply: 'QUICK_REPLY', url: 'URL', copy_code: 'COPY_CODE', flow: 'FLOW', catalog: 'CATALOG' };
    if (!button || button.type !== expected[g.type]) throw unprocessable(`${ptr}/index`, `The template has no ${expected[g.type]} button at index ${g.index}.`);
    if (g.type === 'quick_reply') out.push({ type: 'button', sub_type: 'quick_reply', index: g.index, parameters: [{ type: 'payload', payload: g.payload }] });
    else if (g.type === 'url') {
      if (!variablesOf(button.url).length) throw unprocessable(`${ptr}`, `The URL button at index ${g.index} has no variable.`);
      out.push({ type: 'button', sub_type: 'url', index: g.index, parameters: [{ type: 'text', text: encodeURIComponent(variableValue(g.text, contact)) }] });
    } else if (g.type === 'copy_code') out.push({ type: 'button', sub_type: 'copy_code', index: g.index, parameters: [{ type: 'coupon_code', coupon_code: g.coupon_code }] });
    else if (g.type === 'flow') out.push({ type: 'button', sub_type: 'flow', index: g.index, parameters: [{ type: 'action', action: g.flow_token ? { flow_token: g.flow_token } : {} }] });
    else if (g.type === 'catalog') {
      out.push({ type: 'button', sub_type: 'catalog', index: g.index, parameters: [{ type: 'action', action: g.thumbnail_product_retailer_id ? { thumbnail_product_retailer_id: g.thumbnail_product_retailer_id } : {} }] });
    }
  });
  // Dynamic parts the provider cannot send without a value.
  buttons.forEach((b, index) => {
    if (seen.has(index)) return;
    if (b.type === 'URL' && variablesOf(b.url).length) throw unprocessable(pointer, `The URL button at index ${index} has a variable: give {type: "url", index: ${index}, text}.`);
    if (b.type === 'COPY_CODE') throw unprocessable(pointer, `The copy-code button at index ${index} needs {type: "copy_code", index: ${index}, coupon_code}.`);
  });
  return out;
}
