// What a worker needs to send a campaign's messages, loaded once per batch: the sender (with its
// decrypted token), the effective rate, the stored template and the values, uploaded media ids
// and the route.
// A campaign that can no longer be sent (account disconnected, template no longer approved)
// yields a reason instead, and the worker fails it.
import type { Platform } from '#server/platform.js';
import type { SendOptions } from '#server/providers/types.js';
import { marketingSettings } from '../configuration/marketing.js';
import { resolveSender, type Sender } from '../sender.js';
import { findTemplate, type TemplateRow } from '../templates/lookup.js';
import type { MediaIds, TemplateValues } from '../outbound/template-components.js';
import type { CampaignRow } from './lifecycle.js';
import { providerCatalogIds } from '../commerce/carousel.js';

export interface SendContext {
  campaign: CampaignRow;
  sender: Sender;
  /** Messages per second: the campaign's, never above the number's. */
  rate: number;
  /** The approved template as stored, which the message is built from. */
  stored: TemplateRow;
  template: TemplateValues;
  templateId: string | null;
  mediaIds: MediaIds;
  options: SendOptions;
}

/** Uploaded media ids of the template values (header and carousel cards). */
export function mediaIdsOf(t: TemplateValues): string[] {
  const ids: string[] = [];
  if (t.header && t.header.type !== 'text' && t.header.media_id) ids.push(t.header.media_id);
  if (t.carousel?.type === 'media') for (const card of t.carousel.cards) if (card.header.media_id) ids.push(card.header.media_id);
  return ids;
}

export async function loadSendContext(platform: Platform, c: CampaignRow): Promise<SendContext | { failure: string }> {
  const db = platform.store.db;
  let sender: Sender;
  try {
    sender = await resolveSender(platform, c.workspace_id, c.phone_number_id);
  } catch {
    return { failure: 'The sender number is no longer connected.' };
  }
  if (sender.account.disconnected_at) return { failure: 'The sender business account was disconnected.' };
  const values = c.template as TemplateValues;
  const template = await findTemplate(db, c.workspace_id, { name: values.name, language: values.language, businessAccountId: sender.account.id });
  if (!template) return { failure: `Template ${values.name} (${values.language}) no longer exists.` };
  if (template.status !== 'APPROVED')
    return { failure: `Template ${values.name} (${values.language}) is ${template.status}; only APPROVED templates can be sent.` };
  const mediaIds: MediaIds = new Map();
  const wanted = mediaIdsOf(values);
  if (wanted.length) {
    const rows = await db
      .selectFrom('uploaded_media')
      .select(['id', 'provider_media_id', 'phone_number_id', 'expires_at'])
      .where('workspace_id', '=', c.workspace_id)
      .where('id', 'in', wanted)
      .execute();
    for (const r of rows) mediaIds.set(r.id, r.provider_media_id);
    if (mediaIds.size < new Set(wanted).size) return { failure: 'An uploaded media file of the campaign no longer exists.' };
    // The provider serves a media id to the number it was uploaded for, for 30 days.
    const now = platform.now().getTime();
    const unusable = rows.find(
      (r) => (r.phone_number_id && r.phone_number_id !== sender.number.id) || (r.expires_at && new Date(r.expires_at).getTime() <= now),
    );
    if (unusable) return { failure: `Uploaded media ${unusable.id} is expired or belongs to another number; upload it again for the sender.` };
  }
  let sendValues = values;
  if (values.carousel?.type === 'product') {
    // The provider knows its own catalog ids: the cards are sent with them.
    const catalogs = await providerCatalogIds(db, c.workspace_id, sender.account.id, values.carousel.cards);
    if ('failure' in catalogs) return catalogs;
    sendValues = {
      ...values,
      carousel: { ...values.carousel, cards: values.carousel.cards.map((card) => ({ ...card, catalog_id: catalogs.get(card.catalog_id)! })) },
    };
  }
  let options: SendOptions = {};
  if (template.category === 'MARKETING') {
    const m = await marketingSettings(db, sender.account.id);
    if (m.enabled) options = { route: 'marketing_messages', productPolicy: m.product_policy, activitySharing: m.activity_sharing };
  }
  return {
    campaign: c,
    sender,
    rate: Math.max(1, Math.min(c.rate_per_second, sender.number.messages_per_second)),
    stored: template,
    template: sendValues,
    templateId: template.id,
    mediaIds,
    options,
  };
}
