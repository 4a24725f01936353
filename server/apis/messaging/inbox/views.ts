// Rows to the contract's Message and Chat shapes.
import type { Kysely, Selectable } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database, MessagesTable } from '#server/store/schema.js';
import { WINDOW_MS } from '../outbound/service-window.js';

type S = components['schemas'];

export type MessageRow = Selectable<MessagesTable> & { chatapp_phone_number: string };

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** Only the contract's parts of a stored content (the row may hold provider ids the API does not show). */
function contentView(raw: unknown): S['MessageContent'] {
  const c = (raw && typeof raw === 'object' ? raw : {}) as Record<string, any>;
  const out: S['MessageContent'] = {};
  if (typeof c.text === 'string') out.text = c.text;
  if (typeof c.caption === 'string') out.caption = c.caption;
  if (c.media && typeof c.media === 'object') {
    out.media = {
      url: c.media.url ?? null,
      mime_type: String(c.media.mime_type ?? 'application/octet-stream'),
      filename: c.media.filename ?? null,
      size_bytes: c.media.size_bytes ?? null,
    };
  }
  if (c.location) out.location = c.location;
  if (c.template) out.template = { name: c.template.name, language: c.template.language, template_id: c.template.template_id };
  if (c.reply) out.reply = c.reply;
  if (c.form_response) out.form_response = c.form_response;
  if (c.reaction) out.reaction = c.reaction;
  if (c.interactive && typeof c.interactive === 'object') out.interactive = c.interactive;
  return out;
}

export function messageView(row: MessageRow): S['Message'] {
  const content = contentView(row.content);
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
  };
}

/** The list preview: text or caption, else the template's name, else the kind. */
export function preview(type: string, raw: unknown): string {
  const c = (raw && typeof raw === 'object' ? raw : {}) as Record<string, any>;
  const text =
    typeof c.text === 'string' ? c.text : typeof c.caption === 'string' ? c.caption : (c.template?.name ?? c.reply?.title ?? c.reaction?.emoji ?? `[${type}]`);
  return Array.from(String(text)).slice(0, 100).join('');
}

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

/**
 * An inbound message's content as the `message.received` event shows it. Media are left out:
 * the event's media needs a download URL and inbound files are not downloaded yet.
 */
export function eventContent(raw: Record<string, unknown>): Record<string, unknown> {
  const { media: _media, contacts: _contacts, order: _order, ...rest } = raw;
  return rest;
}
