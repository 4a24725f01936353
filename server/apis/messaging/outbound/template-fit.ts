// The values a send gives for an approved template, fitted to the template as stored: as many
// body values as variables, a header of the template's format, a value for each dynamic button
// (422 naming the field otherwise). A media header without a value takes the send's `mediaUrl`
// shorthand, or else the sample submitted with the template. Uploaded media (`media_id`) must have
// been resolved by the caller for the sender number (templates/uploaded-media.ts). The fitted
// values then go through the one builder (template-components.ts), and the message as built is
// refused (422 naming the field) where it exceeds the provider's caps with its values in place.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { TemplateRow } from '../templates/lookup.js';
import type { UploadedMediaIds } from '../templates/uploaded-media.js';
import { renderedOverflow, templateMessage, variablesOf, type BuiltTemplate, type RecipientFields, type TemplateValues } from './template-components.js';

type S = components['schemas'];
type Variable = S['TemplateVariable'];
type HeaderParam = { type: 'text' | 'image' | 'video' | 'document'; text?: Variable; media_url?: string; media_id?: string; filename?: string };
type Stored = Record<string, any>;

/** A media URL the message makes the provider fetch, with its JSON pointer (checked by the caller). */
export type MediaUrl = { url: string; pointer: string };

export interface FittedTemplate {
  values: TemplateValues;
  mediaUrls: MediaUrl[];
}

const P = '/body/template';
const unprocessable = (pointer: string, detail: string) => new HttpProblem(422, 'unprocessable', detail, { errors: [{ pointer, detail }] });
const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail }] });

/** A header's media: exactly one of a URL and an upload, the upload resolved for the sender. */
function checkMediaSource(given: { media_url?: string; media_id?: string }, uploads: UploadedMediaIds, pointer: string): void {
  if ((given.media_url === undefined) === (given.media_id === undefined)) throw invalid(pointer, 'Give exactly one of media_url and media_id.');
  // The caller resolves every media_id first; a missing one would otherwise be sent as undefined.
  if (given.media_id !== undefined && !uploads.get(given.media_id)) {
    throw unprocessable(`${pointer}/media_id`, `media_id ${given.media_id} was not resolved for this sender.`);
  }
}

/** The values checked against the template and completed (header media from the shorthand or the sample); the order of the checks is the order of the components. */
export function fitTemplateValues(
  template: TemplateRow,
  values: S['TemplateSendParameters'],
  shorthand: { mediaUrl?: string; filename?: string },
  now: Date,
  uploads: UploadedMediaIds = new Map(),
): FittedTemplate {
  const stored = (template.components ?? []) as Stored[];
  const find = (type: string) => stored.find((c) => c.type === type);
  const fitted: TemplateValues = { name: template.name, language: template.language };
  const mediaUrls: MediaUrl[] = [];

  // ---- header
  const header = find('HEADER');
  const given = values.header as HeaderParam | undefined;
  if (given && shorthand.mediaUrl) throw unprocessable('/body/mediaUrl', 'Give the header media either as mediaUrl or as template.header, not both.');
  if (!header && (given || shorthand.mediaUrl)) throw unprocessable(given ? `${P}/header` : '/body/mediaUrl', 'The template has no header.');
  if (header?.format === 'TEXT') {
    const vars = variablesOf(header.text);
    if (vars.length && given?.type !== 'text') throw unprocessable(`${P}/header`, 'The template header has a variable: give header {type: "text", text}.');
    if (!vars.length && given) throw unprocessable(`${P}/header`, 'The template header has no variable.');
    if (vars.length && given?.text !== undefined) fitted.header = { type: 'text', text: given.text };
  } else if (header && ['IMAGE', 'VIDEO', 'DOCUMENT'].includes(header.format)) {
    const kind = header.format.toLowerCase() as 'image' | 'video' | 'document';
    if (given && given.type !== kind) throw unprocessable(`${P}/header/type`, `The template header is ${kind}.`);
    let source: { media_url: string } | { media_id: string };
    if (given) {
      checkMediaSource(given, uploads, `${P}/header`);
      if (given.media_url) mediaUrls.push({ url: given.media_url, pointer: `${P}/header/media_url` });
      source = given.media_id !== undefined ? { media_id: given.media_id } : { media_url: given.media_url! };
    } else {
      // Without a per-message file the sample submitted with the template is sent.
      const link = shorthand.mediaUrl ?? (header.header_url as string | undefined);
      if (!link) throw unprocessable('/body/mediaUrl', `The template has a ${kind} header: give mediaUrl or template.header.`);
      if (shorthand.mediaUrl) mediaUrls.push({ url: link, pointer: '/body/mediaUrl' });
      source = { media_url: link };
    }
    const filename = given?.filename ?? shorthand.filename;
    fitted.header = kind === 'document' ? { type: 'document', ...source, ...(filename ? { filename } : {}) } : { type: kind, ...source };
  } else if (header?.format === 'LOCATION') {
    throw unprocessable(`${P}/header`, 'Templates with a location header cannot be sent through this API yet.');
  }

  // ---- body
  const body = find('BODY');
  // Authentication bodies are written by the provider around one variable: the code.
  const vars = template.category === 'AUTHENTICATION' ? [1] : variablesOf(body?.text);
  const bodyValues = values.body ?? [];
  if (bodyValues.length !== vars.length) {
    throw unprocessable(`${P}/body`, `The template body has ${vars.length} variable(s); ${bodyValues.length} value(s) were given.`);
  }
  if (bodyValues.length) fitted.body = bodyValues;

  // ---- limited-time offer
  const lto = find('LIMITED_TIME_OFFER');
  if (values.limited_time_offer && !lto?.limited_time_offer?.has_expiration) {
    throw unprocessable(`${P}/limited_time_offer`, 'The template has no limited-time offer with an expiry.');
  }
  if (lto?.limited_time_offer?.has_expiration) {
    const at = values.limited_time_offer ? new Date(values.limited_time_offer.expires_at) : null;
    if (!at) throw unprocessable(`${P}/limited_time_offer`, 'The offer has an expiry: give limited_time_offer.expires_at.');
    if (at.getTime() <= now.getTime()) throw unprocessable(`${P}/limited_time_offer/expires_at`, 'expires_at must be in the future.');
    fitted.limited_time_offer = values.limited_time_offer;
  }

  // ---- buttons
  const buttons = (find('BUTTONS')?.buttons ?? []) as Stored[];
  checkButtons(buttons, values.buttons ?? [], `${P}/buttons`);
  if (values.buttons?.length) fitted.buttons = values.buttons;

  // ---- carousel
  const carousel = find('CAROUSEL');
  if (values.carousel && !carousel) throw unprocessable(`${P}/carousel`, 'The template has no carousel.');
  if (carousel) {
    const c = values.carousel as { type?: string; cards?: any[] } | undefined;
    if (c?.type !== 'media') throw unprocessable(`${P}/carousel`, 'The template is a media carousel: give carousel {type: "media", cards}.');
    const cards = carousel.cards as Stored[];
    if (c.cards!.length !== cards.length) throw unprocessable(`${P}/carousel/cards`, `The template has ${cards.length} cards; ${c.cards!.length} were given.`);
    cards.forEach((card, i) => {
      const given = c.cards![i];
      const ptr = `${P}/carousel/cards/${i}`;
      const h = (card.components as Stored[]).find((x) => x.type === 'HEADER');
      const kind = String(h?.format ?? 'IMAGE').toLowerCase();
      if (given.header?.type !== kind) throw unprocessable(`${ptr}/header/type`, `Card ${i + 1} has a ${kind} header.`);
      checkMediaSource(given.header, uploads, `${ptr}/header`);
      if (given.header.media_url) mediaUrls.push({ url: given.header.media_url, pointer: `${ptr}/header/media_url` });
      const cardVars = variablesOf((card.components as Stored[]).find((x) => x.type === 'BODY')?.text);
      const cardBody = (given.body ?? []) as Variable[];
      if (cardBody.length !== cardVars.length)
        throw unprocessable(`${ptr}/body`, `Card ${i + 1} has ${cardVars.length} variable(s); ${cardBody.length} value(s) were given.`);
      const cardButtons = ((card.components as Stored[]).find((x) => x.type === 'BUTTONS')?.buttons ?? []) as Stored[];
      checkButtons(cardButtons, given.buttons ?? [], `${ptr}/buttons`);
    });
    fitted.carousel = values.carousel as TemplateValues['carousel'];
  }

  return { values: fitted, mediaUrls };
}

/** Each value names a button of its type, once; every dynamic button (a URL with a variable, a copy code) has a value. */
function checkButtons(buttons: Stored[], given: S['TemplateButtonParameter'][], pointer: string): void {
  const seen = new Set<number>();
  given.forEach((g, i) => {
    const ptr = `${pointer}/${i}`;
    const button = buttons[g.index];
    if (seen.has(g.index)) throw unprocessable(`${ptr}/index`, `Button ${g.index} has two values.`);
    seen.add(g.index);
    const expected: Record<string, string> = { quick_reply: 'QUICK_REPLY', url: 'URL', copy_code: 'COPY_CODE', flow: 'FLOW', catalog: 'CATALOG' };
    if (!button || button.type !== expected[g.type]) throw unprocessable(`${ptr}/index`, `The template has no ${expected[g.type]} button at index ${g.index}.`);
    if (g.type === 'url' && !variablesOf(button.url).length) throw unprocessable(`${ptr}`, `The URL button at index ${g.index} has no variable.`);
  });
  // Dynamic parts the provider cannot send without a value.
  buttons.forEach((b, index) => {
    if (seen.has(index)) return;
    if (b.type === 'URL' && variablesOf(b.url).length)
      throw unprocessable(pointer, `The URL button at index ${index} has a variable: give {type: "url", index: ${index}, text}.`);
    if (b.type === 'COPY_CODE') throw unprocessable(pointer, `The copy-code button at index ${index} needs {type: "copy_code", index: ${index}, coupon_code}.`);
  });
}

/** A send's template message for one recipient: the values fitted to the template, then built. */
export function buildTemplateMessage(
  template: TemplateRow,
  values: S['TemplateSendParameters'],
  contact: RecipientFields,
  shorthand: { mediaUrl?: string; filename?: string },
  now: Date,
  uploads: UploadedMediaIds = new Map(),
): BuiltTemplate & { mediaUrls: MediaUrl[] } {
  const fitted = fitTemplateValues(template, values, shorthand, now, uploads);
  const built = templateMessage(template, fitted.values, contact, uploads);
  const overflow = renderedOverflow(template, built);
  if (overflow) throw unprocessable(`${P}${overflow.pointer}`, overflow.detail);
  return { ...built, mediaUrls: fitted.mediaUrls };
}
