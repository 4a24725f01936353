// A campaign's template values, turned into the provider's template message for one recipient:
// contact-field variables are filled from the contact's row (as literal text, never expanded
// again), media headers point at a URL or an uploaded file's provider media id.
import type { components } from '../../../../generated/messaging/types.js';
import type { OutboundMessage, TemplateParameter, TemplateSendComponent } from '../../../providers/types.js';

type S = components['schemas'];
// openapi-typescript writes a property holding a discriminated union as `Omit<Union, "type">`,
// dropping the discriminator; these restore the unions the contract declares.
type MediaCard = Omit<S['TemplateMediaCarouselCardParameter'], 'header'> & { header: S['TemplateCarouselCardHeaderParameter'] };
type Carousel = (Omit<S['TemplateMediaCarouselParameter'], 'cards'> & { cards: MediaCard[] }) | S['TemplateProductCarouselParameter'];
export type TemplateValues = Omit<S['TemplateSendParameters'], 'header' | 'carousel'> & { header?: S['TemplateHeaderParameter']; carousel?: Carousel };
export type CampaignAudience = S['CampaignAudience'];
type Variable = S['TemplateVariable'];
type Button = S['TemplateButtonParameter'];
type MediaHeader = { type: 'image' | 'video' | 'document'; media_url?: string; media_id?: string; filename?: string };

/** What a variable may read of the recipient. */
export interface RecipientFields {
  name: string | null;
  phone: string;
  email: string | null;
  custom_fields: Record<string, unknown> | null;
}

/** Uploaded media ids (`med_…`) → the provider's media id, resolved once per campaign. */
export type MediaIds = Map<string, string>;

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

function media(h: MediaHeader, ids: MediaIds): TemplateParameter {
  // Graph takes `{ id }` for uploaded media where it takes `{ link }` for URLs.
  const ref = h.media_id ? { id: ids.get(h.media_id)! } : { link: h.media_url! };
  if (h.type === 'document') return { type: 'document', document: { ...ref, ...(h.filename ? { filename: h.filename } : {}) } };
  return h.type === 'image' ? { type: 'image', image: ref } : { type: 'video', video: ref };
}

function buttons(list: Button[] | undefined, contact: RecipientFields): TemplateSendComponent[] {
  return (list ?? []).map((b): TemplateSendComponent => {
    switch (b.type) {
      case 'quick_reply':
        return { type: 'button', sub_type: 'quick_reply', index: b.index, parameters: [{ type: 'payload', payload: b.payload }] };
      case 'url':
        return { type: 'button', sub_type: 'url', index: b.index, parameters: [{ type: 'text', text: variableValue(b.text, contact) }] };
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

function body(values: Variable[] | undefined, contact: RecipientFields): TemplateSendComponent[] {
  return values?.length ? [{ type: 'body', parameters: values.map((v) => ({ type: 'text', text: variableValue(v, contact) })) }] : [];
}

/** The message for one recipient. `catalogs` maps our catalog ids to the provider's. */
export function templateMessage(t: TemplateValues, contact: RecipientFields, ids: MediaIds, catalogs: Map<string, string> = new Map()): OutboundMessage {
  const out: TemplateSendComponent[] = [];
  if (t.header) {
    out.push(
      t.header.type === 'text'
        ? { type: 'header', parameters: [{ type: 'text', text: variableValue(t.header.text, contact) }] }
        : { type: 'header', parameters: [media(t.header, ids)] },
    );
  }
  out.push(...body(t.body, contact));
  if (t.limited_time_offer) {
    out.push({ type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: Date.parse(t.limited_time_offer.expires_at) } }] });
  }
  out.push(...buttons(t.buttons, contact));
  if (t.carousel?.type === 'media') {
    const cards = t.carousel.cards.map((card, i) => ({
      card_index: i,
      components: [{ type: 'header' as const, parameters: [media(card.header, ids)] }, ...body(card.body, contact), ...buttons(card.buttons, contact)],
    }));
    out.push({ type: 'carousel', cards });
  } else if (t.carousel?.type === 'product') {
    const cards = t.carousel.cards.map((card, i) => ({
      card_index: i,
      components: [
        {
          type: 'header' as const,
          // Graph's product card header; our TemplateParameter union does not list it.
          parameters: [{ type: 'product', product: { product_retailer_id: card.product_retailer_id, catalog_id: catalogs.get(card.catalog_id) ?? card.catalog_id } } as unknown as TemplateParameter],
        },
      ],
    }));
    out.push({ type: 'carousel', cards });
  }
  return { type: 'template', template: { name: t.name, language: { code: t.language, policy: 'deterministic' }, ...(out.length ? { components: out } : {}) } };
}
