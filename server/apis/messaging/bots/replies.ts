// What bots send, through `deliver` (the same path as POST /api/chatapp/send: the 24-hour rule,
// storage in `messages` and the inbox apply), and chat hand-over to an agent.
import type { components } from '#generated/messaging/types.js';
import type { Platform } from '#server/platform.js';
import type { MessageBotReplyRow } from '#server/store/schema/bots.js';
import { answerLocale } from '../automation/answers.js';
import { fieldKind, formatForCustomer } from '../automation/contact-state.js';
import { workspaceLocale } from '../configuration/messaging-settings.js';
import { deliver } from '../outbound/deliver.js';

type SendBody = components['schemas']['SendMessageRequest'];

export interface ContactFacts {
  id: string;
  phone: string;
  name: string | null;
  custom_fields: Record<string, unknown>;
}

export async function contactFacts(platform: Platform, workspaceId: string, contactId: string): Promise<ContactFacts | undefined> {
  const row = await platform.store.db
    .selectFrom('contacts')
    .select(['id', 'phone', 'name', 'custom_fields'])
    .where('id', '=', contactId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  return row && { id: row.id, phone: row.phone, name: row.name, custom_fields: (row.custom_fields ?? {}) as Record<string, unknown> };
}

/**
 * `{{contact.name}}` and `{{contact.fields.<key>}}`; a missing value becomes empty text. With a
 * `locale`, number and date fields are written as it writes them (`1,5`, `3. Dezember 2026`).
 */
export function fillPlaceholders(text: string, contact: ContactFacts, locale?: string): string {
  return text
    .replace(/\{\{\s*contact\.name\s*\}\}/g, () => contact.name ?? '')
    .replace(/\{\{\s*contact\.fields\.([a-z][a-z0-9_]{0,63})\s*\}\}/g, (_m, key: string) => {
      const value = Object.hasOwn(contact.custom_fields, key) ? contact.custom_fields[key] : undefined;
      if (value === undefined || value === null) return '';
      const kind = locale ? fieldKind(value) : undefined;
      return (kind && locale && formatForCustomer(value, kind, locale)) || String(value);
    })
    .replace(/ +([!?.,])/g, '$1')
    .trim();
}

/** The locale a contact reads values in: the workspace's, else the contact's country's, else en-US. */
async function readerLocale(platform: Platform, workspaceId: string, contact: ContactFacts): Promise<string> {
  return answerLocale(undefined, contact.phone, await workspaceLocale(platform.store.db, workspaceId));
}

export async function sendText(platform: Platform, workspaceId: string, phoneNumberId: string, contact: ContactFacts, text: string) {
  return deliver(platform, workspaceId, {
    contact_no: contact.phone,
    chatapp_phone_number: phoneNumberId,
    messageType: 'text',
    message: fillPlaceholders(text, contact, await readerLocale(platform, workspaceId, contact)) || text,
    preview_url: false,
  });
}

/** A message bot's reply as a SendMessageRequest; a template is looked up by id at send time (it may have been renamed away). */
export async function sendBotReply(platform: Platform, workspaceId: string, phoneNumberId: string, contact: ContactFacts, reply: MessageBotReplyRow) {
  const base = { contact_no: contact.phone, chatapp_phone_number: phoneNumberId };
  let body: SendBody;
  if (reply.type === 'text') {
    return sendText(platform, workspaceId, phoneNumberId, contact, reply.text ?? '');
  } else if (reply.type === 'template') {
    const template = await platform.store.db
      .selectFrom('message_templates')
      .select(['name', 'language'])
      .where('id', '=', reply.template_id ?? '')
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    if (!template) throw new Error(`template ${reply.template_id} of a message bot is gone`);
    body = { ...base, messageType: 'template', template: { name: template.name, language: reply.language ?? template.language } } as SendBody;
  } else {
    const caption = reply.caption ? fillPlaceholders(reply.caption, contact, await readerLocale(platform, workspaceId, contact)) : undefined;
    body = {
      ...base,
      messageType: reply.media_type ?? 'document',
      mediaUrl: reply.media_url ?? '',
      ...(caption && reply.media_type !== 'audio' ? { message: caption } : {}),
    } as SendBody;
  }
  return deliver(platform, workspaceId, body);
}

/**
 * Hands the chat of (number, contact) to `agentId`, or round robin over the workspace's agents
 * after `lastAgentId`. Answers the agent given the chat, or null when the workspace has none.
 */
export async function handOver(
  platform: Platform,
  workspaceId: string,
  phoneNumberId: string,
  contactId: string,
  agentId: string | undefined,
  lastAgentId: string | null,
): Promise<string | null> {
  const db = platform.store.db;
  let chosen = agentId ?? null;
  if (chosen) {
    const exists = await db.selectFrom('owners').select('id').where('id', '=', chosen).where('workspace_id', '=', workspaceId).executeTakeFirst();
    if (!exists) chosen = null; // the agent left the workspace: round robin instead
  }
  if (!chosen) {
    const agents = (await db.selectFrom('owners').select('id').where('workspace_id', '=', workspaceId).orderBy('id').execute()).map((r) => r.id);
    if (!agents.length) return null;
    chosen = agents.find((id) => lastAgentId !== null && id > lastAgentId) ?? agents[0]!;
  }
  const now = platform.now();
  await db
    .updateTable('chats')
    .set({ assigned_owner_id: chosen, assigned_at: now })
    .where('workspace_id', '=', workspaceId)
    .where('phone_number_id', '=', phoneNumberId)
    .where('contact_id', '=', contactId)
    .execute();
  return chosen;
}
