// Rows to the contract's Message and Chat shapes.
import type { Kysely, Selectable } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database, MessagesTable } from '#server/store/schema.js';
import { WINDOW_MS } from '../outbound/service-window.js';
import { contactCard, previewOf } from '../inbound/content.js';

type S = components['schemas'];

export type MessageRow = Selectable<MessagesTable> & { chatapp_phone_number: string };

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The API's download URL of a message's medium: inbound media are fetched through us, not the provider. */
export function mediaUrl(baseUrl: string, messageId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/chatapp/messages/${messageId}/media`;
}

const CONTENT_PARTS = ['location', 'reply', 'form_response', 'reaction', 'order', 'system', 'errors', 'referral', 'referred_product'] as const;

/**
 * Only the contract's parts of a stored content (the row may hold provider ids the API does not
 * show). An inbound medium's `url` is our download URL (`GET /api/chatapp/messages/{id}/media`).
 */
function contentView(raw: unknown, inboundMedia?: { baseUrl: string; messageId: string }): S['MessageContent'] {
  const c = (raw && typeof raw === 'object' ? raw : {}) as Record<string, any>;
  const out: S['MessageContent'] = {};
  if (typeof c.text === 'string') out.text = c.text;
  if (typeof c.caption === 'string') out.caption = c.caption;
  if (c.media && typeof c.media === 'object') {
    const inbound = inboundMedia && typeof c.media.provider_media_id === 'string';
    out.media = {
      url: inbound ? mediaUrl(inboundMedia.baseUrl, inboundMedia.messageId) : (c.media.url ?? null),
      mime_type: String(c.media.mime_type ?? 'application/octet-stream'),
      filename: c.media.filename ?? null,
      size_bytes: c.media.size_bytes ?? null,
      // What the provider said of a customer's file; an outbound row's own bookkeeping stays in the row.
      ...(inbound ? { provider_media_id: c.media.provider_media_id } : {}),
      ...(inbound && typeof c.media.sha256 === 'string' ? { sha256: c.media.sha256 } : {}),
      ...(inbound && typeof c.media.voice === 'boolean' ? { voice: c.media.voice } : {}),
      ...(inbound && typeof c.media.animated === 'boolean' ? { animated: c.media.animated } : {}),
    };
  }
  if (c.template) out.template = { name: c.template.name, language: c.template.language, template_id: c.template.template_id };
  // Sent cards are stored as the sender gave them (optional parts left out): shown in the card's full shape.
  if (Array.isArray(c.contacts)) out.contacts = c.contacts.map(contactCard);
  for (const part of CONTENT_PARTS) if (c[part] !== undefined && c[part] !== null) (out as Record<string, unknown>)[part] = c[part];
  if (c.forwarded === true) out.forwarded = true;
  if (c.frequently_forwarded === true) out.frequently_forwarded = true;
  if (c.interactive && typeof c.interactive === 'object') out.interactive = c.interactive;
  return out;
}

export function messageView(row: MessageRow, baseUrl: string): S['Message'] {
  const content = contentView(row.content, row.direction === 'inbound' ? { baseUrl, messageId: row.id } : undefined);
  const billing = row.billing ?? null;
  return {
    id: row.id,
    wamid: row.provider_message_id,
    chat_id: row.chat_id ?? '',
    contact_id: row.contact_id,
    chatapp_phone_number: row.chatapp_phone_number,
    direction: row.direction,
    type: row.type as S['MessageKind'],
    content,
    status: row.status as S['MessageStatus'],
    error: (row.error as S['MessageError'] | null) ?? null,
    reply_to: row.reply_to_id,
    campaign_id: typeof (row as Record<string, unknown>).campaign_id === 'string' ? ((row as Record<string, unknown>).campaign_id as string) : null,
    created_at: iso(row.created_at)!,
    sent_at: iso(row.sent_at),
    delivered_at: iso(row.delivered_at),
    read_at: iso(row.read_at),
    failed_at: iso(row.failed_at),
    ...(billing?.conversation ? { conversation: billing.conversation } : {}),
    ...(billing?.pricing ? { pricing: billing.pricing } : {}),
  };
}

/** The list preview: text or caption, else the template's name, else a summary of the kind. */
export const preview = previewOf;

/** The chats query with everything a Chat shows, scoped to the workspace. */
export function chatQuery(db: Kysely<Database>, workspaceId: string) {
  return db
    .selectFrom('chats')
    .innerJoin('contacts', 'contacts.id', 'chats.contact_id')
    .innerJoin('phone_numbers', 'phone_numbers.id', 'chats.phone_number_id')
    .leftJoin('messages', 'messages.id', 'chats.last_message_id')
    .select([
      'chats.id',
      'chats.created_at',
      'chats.last_message_at',
      'chats.unread_count',
      'chats.assigned_owner_id',
      'contacts.id as contact_id',
      'contacts.name as contact_name',
      'contacts.phone as contact_phone',
      'contacts.last_inbound_at',
      'phone_numbers.display_phone_number',
      'messages.id as m_id',
      'messages.direction as m_direction',
      'messages.type as m_type',
      'messages.content as m_content',
      'messages.status as m_status',
      'messages.created_at as m_created_at',
    ])
    .where('chats.workspace_id', '=', workspaceId);
}

export type ChatRow = Awaited<ReturnType<ReturnType<typeof chatQuery>['executeTakeFirstOrThrow']>>;

export function chatView(row: ChatRow, now: Date): S['Chat'] {
  const windowEnd = row.last_inbound_at ? new Date(new Date(row.last_inbound_at).getTime() + WINDOW_MS) : null;
  return {
    id: row.id,
    contact: { id: row.contact_id, name: row.contact_name, contact_no: row.contact_phone },
    chatapp_phone_number: row.display_phone_number,
    last_message: row.m_id
      ? {
          id: row.m_id,
          direction: row.m_direction as S['MessageDirection'],
          type: row.m_type as S['MessageKind'],
          preview: preview(row.m_type!, row.m_content),
          status: row.m_status as S['MessageStatus'],
          created_at: iso(row.m_created_at)!,
        }
      : null,
    unread_count: row.unread_count,
    assigned_agent_id: row.assigned_owner_id,
    window_expires_at: windowEnd && windowEnd.getTime() > now.getTime() ? windowEnd.toISOString() : null,
    last_message_at: iso(row.last_message_at)!,
    created_at: iso(row.created_at)!,
  };
}

/** An inbound message's content as the `message.received` event shows it: all of it, media with our download URL. */
export function eventContent(raw: S['MessageContent'], baseUrl: string, messageId: string): Record<string, unknown> {
  return contentView(raw, { baseUrl, messageId });
}
