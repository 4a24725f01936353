// The provider's inbound message in the contract's shape (MessageKind and MessageContent): every
// part the provider sends is kept, so what a customer sent is what the API and the
// `message.received` event show. The stored content is this shape; the views add what depends on
// the reader (the media download URL).
import type { Transaction } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database } from '#server/store/schema.js';

type S = components['schemas'];
type P = S['ProviderInboundMessage'];
type Content = S['MessageContent'];

const MEDIA_KINDS = ['image', 'document', 'audio', 'video', 'sticker'] as const;

/** A value of the provider's that may be missing, as the contract's `string | null`. */
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * One `sha256` encoding across the API: 64 lower-case hex digits, as uploads give it. The Cloud
 * API sends an inbound medium's digest in base64; it is converted. Anything that is not a
 * SHA-256 digest in either form is left out rather than stored as something else.
 */
export function sha256Hex(given: string | undefined): string | undefined {
  if (!given) return undefined;
  if (/^[0-9a-fA-F]{64}$/.test(given)) return given.toLowerCase();
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(given)) return undefined;
  const bytes = Buffer.from(given.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === 32 ? bytes.toString('hex') : undefined;
}

export async function inboundContent(trx: Transaction<Database>, workspaceId: string, m: P): Promise<{ type: string; content: Content }> {
  const kind = await kindContent(trx, workspaceId, m);
  const content: Content = { ...kind.content, ...contextContent(m) };
  return { type: kind.type, content };
}

/** What every kind may carry: the ad it came from, the product asked about, forwarding. */
function contextContent(m: P): Content {
  const out: Content = {};
  if (m.referral) out.referral = referral(m.referral);
  const product = m.context?.referred_product;
  if (product?.catalog_id && product.product_retailer_id)
    out.referred_product = { catalog_id: product.catalog_id, product_retailer_id: product.product_retailer_id };
  if (m.context?.forwarded === true) out.forwarded = true;
  if (m.context?.frequently_forwarded === true) out.frequently_forwarded = true;
  return out;
}

function referral(r: S['ProviderReferral']): S['InboundReferral'] {
  return {
    source_url: str(r.source_url),
    source_id: str(r.source_id),
    source_type: str(r.source_type),
    headline: str(r.headline),
    body: str(r.body),
    media_type: str(r.media_type),
    image_url: str(r.image_url),
    video_url: str(r.video_url),
    thumbnail_url: str(r.thumbnail_url),
    ctwa_clid: str(r.ctwa_clid),
    welcome_message: str(r.welcome_message?.text),
  };
}

async function kindContent(trx: Transaction<Database>, workspaceId: string, m: P): Promise<{ type: string; content: Content }> {
  switch (m.type) {
    case 'text':
      if (m.text) return { type: 'text', content: { text: m.text.body } };
      break;
    case 'image':
    case 'document':
    case 'audio':
    case 'video':
    case 'sticker': {
      const media = m[m.type as (typeof MEDIA_KINDS)[number]];
      if (!media) break;
      const medium: S['MessageMedia'] = {
        url: null,
        mime_type: media.mime_type,
        filename: media.filename ?? null,
        size_bytes: null,
        provider_media_id: media.id,
        ...(sha256Hex(media.sha256) ? { sha256: sha256Hex(media.sha256)! } : {}),
        ...(typeof media.voice === 'boolean' ? { voice: media.voice } : {}),
        ...(typeof media.animated === 'boolean' ? { animated: media.animated } : {}),
      };
      return { type: m.type, content: { ...(media.caption ? { caption: media.caption } : {}), media: medium } };
    }
    case 'location':
      if (m.location) {
        const { latitude, longitude, name, address, url } = m.location;
        return {
          type: 'location',
          content: { location: { latitude, longitude, ...(name ? { name } : {}), ...(address ? { address } : {}), ...(url ? { url } : {}) } },
        };
      }
      break;
    case 'button':
      if (m.button) return { type: 'button', content: { text: m.button.text, reply: { id: m.button.payload, title: m.button.text } } };
      break;
    case 'interactive': {
      const choice = m.interactive?.button_reply ?? m.interactive?.list_reply;
      if (choice) {
        const reply = { id: choice.id, title: choice.title, ...(choice.description ? { description: choice.description } : {}) };
        return { type: 'interactive', content: { reply } };
      }
      const form = m.interactive?.nfm_reply;
      if (form) {
        const response = parseObject(form.response_json);
        return {
          type: 'form_response',
          content: {
            form_response: {
              flow_token: typeof response.flow_token === 'string' ? response.flow_token : null,
              response: response as S['MessageFormResponse']['response'],
            },
          },
        };
      }
      break;
    }
    case 'reaction':
      if (m.reaction) {
        const target = await trx
          .selectFrom('messages')
          .select('id')
          .where('provider_message_id', '=', m.reaction.message_id)
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirst();
        return { type: 'reaction', content: { reaction: { emoji: m.reaction.emoji ?? '', message_id: target?.id ?? null } } };
      }
      break;
    case 'contacts':
      if (m.contacts?.length) return { type: 'contacts', content: { contacts: m.contacts.map(contactCard) } };
      break;
    case 'order':
      if (m.order) {
        const items = (m.order.product_items ?? []).map((i) => ({
          product_retailer_id: i.product_retailer_id,
          quantity: i.quantity,
          item_price: i.item_price,
          currency: i.currency,
        }));
        const note = str(m.order.text);
        return { type: 'order', content: { ...(note ? { text: note } : {}), order: { catalog_id: m.order.catalog_id, text: note, items } } };
      }
      break;
    case 'system':
      if (m.system) {
        const system = { type: str(m.system.type) ?? 'unknown', body: str(m.system.body), wa_id: str(m.system.wa_id) };
        return { type: 'system', content: { ...(system.body ? { text: system.body } : {}), system } };
      }
      break;
  }
  // The contract: kinds we do not model (and parts missing their content) are kept as `unsupported`,
  // with the provider's errors, so the customer's message still shows and still opens the window.
  const errors = (m.errors ?? []).map((e) => ({
    code: e.code,
    title: e.title ?? e.message ?? 'Unsupported',
    detail: e.error_data?.details ?? (e.message && e.message !== e.title ? e.message : null),
  }));
  return { type: 'unsupported', content: { text: `Unsupported message (${m.type.slice(0, 40)})`, ...(errors.length ? { errors } : {}) } };
}

/** A contact card in the contract's shape (every part present, `null` when absent); applying it again changes nothing. */
export function contactCard(c: S['ProviderSharedContact']): S['SharedContactCard'] {
  const n = c.name;
  const labelled = <T extends { type?: string }>(list: T[] | undefined, key: keyof T) =>
    (list ?? []).flatMap((x) => (typeof x[key] === 'string' && x[key] !== '' ? [{ [key]: x[key] as string, type: str(x.type) }] : []));
  const org =
    c.org && (c.org.company || c.org.department || c.org.title)
      ? { company: str(c.org.company), department: str(c.org.department), title: str(c.org.title) }
      : null;
  return {
    name: {
      formatted_name: n.formatted_name,
      first_name: str(n.first_name),
      last_name: str(n.last_name),
      middle_name: str(n.middle_name),
      prefix: str(n.prefix),
      suffix: str(n.suffix),
    },
    phones: (c.phones ?? []).map((p) => ({ phone: str(p.phone), wa_id: str(p.wa_id), type: str(p.type) })),
    emails: labelled(c.emails, 'email') as S['SharedContactCardEmail'][],
    org,
    urls: labelled(c.urls, 'url') as S['SharedContactCardUrl'][],
    addresses: (c.addresses ?? []).map((a) => ({
      street: str(a.street),
      city: str(a.city),
      state: str(a.state),
      zip: str(a.zip),
      country: str(a.country),
      country_code: str(a.country_code),
      type: str(a.type),
    })),
    birthday: str(c.birthday),
  };
}

function parseObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The list preview of a content: text or caption, else what the kind holds, else the kind. */
export function previewOf(type: string, raw: unknown): string {
  const c = (raw && typeof raw === 'object' ? raw : {}) as Record<string, any>;
  const text = typeof c.text === 'string' && c.text !== '' ? c.text : typeof c.caption === 'string' && c.caption !== '' ? c.caption : summary(type, c);
  return Array.from(String(text)).slice(0, 100).join('');
}

function summary(type: string, c: Record<string, any>): string {
  if (c.template?.name) return c.template.name;
  if (c.reply?.title) return c.reply.title;
  if (c.reaction && typeof c.reaction.emoji === 'string') return c.reaction.emoji;
  if (c.order && Array.isArray(c.order.items)) {
    const items: { quantity: number; item_price: number; currency: string }[] = c.order.items;
    const count = items.reduce((n, i) => n + (Number(i.quantity) || 0), 0);
    const currencies = new Set(items.map((i) => i.currency));
    const total = items.reduce((n, i) => n + (Number(i.quantity) || 0) * (Number(i.item_price) || 0), 0);
    const amount = currencies.size === 1 ? ` (${[...currencies][0]} ${total.toFixed(2)})` : '';
    return `Order: ${count} item${count === 1 ? '' : 's'}${amount}`;
  }
  if (Array.isArray(c.contacts) && c.contacts.length) return `Contact: ${c.contacts.map((x: any) => x?.name?.formatted_name ?? '').join(', ')}`;
  if (c.location) return `Location: ${c.location.name ?? c.location.address ?? `${c.location.latitude}, ${c.location.longitude}`}`;
  if (c.media?.filename) return c.media.filename;
  return `[${type}]`;
}
