// The inbox: chats newest first with unread counts, a contact's messages, marking a chat read (a
// read receipt to the provider too), the typing indicator, and assigning a chat to an agent (an
// owner of the workspace). Everything is scoped to the caller's workspace: another workspace's
// chat, contact or agent answers the same 404 as an unknown one.
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeCursor, encodeCursor, invalidCursor } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { requireE164 } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { ProviderError } from '#server/providers/types.js';
import { chatQuery, chatView, messageView } from './views.js';
import { AGENT_ROLES } from '../operations/agents.js';
import { windowOpen } from '../outbound/service-window.js';
import { resolveSender } from '../sender.js';

const notFound = (what: string, pointer?: string) =>
  new HttpProblem(404, 'not-found', `No ${what} in this workspace.`, pointer ? { errors: [{ pointer, detail: `unknown ${what}` }] } : {});

/** A (time, id) keyset position from a cursor of this list. */
function position(platform: Platform, workspaceId: string, operation: string, cursor: string | undefined) {
  const p = decodeCursor(platform.secrets, { workspaceId, operation }, cursor);
  if (!p) return undefined;
  const at = new Date(String(p.t));
  if (typeof p.id !== 'string' || Number.isNaN(at.getTime())) throw invalidCursor();
  return { at, id: p.id };
}

async function numberFilter(platform: Platform, workspaceId: string, given: string | undefined, pointer: string): Promise<string | undefined> {
  if (given === undefined) return undefined;
  const e164 = requireE164(given, pointer);
  const row = await platform.store.db
    .selectFrom('phone_numbers')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('display_phone_number', '=', e164)
    .executeTakeFirst();
  if (!row) throw notFound('phone number', pointer);
  return row.id;
}

async function chatById(platform: Platform, workspaceId: string, chatId: string) {
  const row = await chatQuery(platform.store.db, workspaceId).where('chats.id', '=', chatId).executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'not-found', `No chat ${chatId} in this workspace.`);
  return row;
}

export const listChats: Handler<operations['listChats']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const q = (request.query ?? {}) as NonNullable<operations['listChats']['parameters']['query']>;
  const limit = q.limit ?? 20;
  const after = position(platform, workspaceId, 'listChats', q.cursor);
  let query = chatQuery(platform.store.db, workspaceId);
  const pn = await numberFilter(platform, workspaceId, q.chatapp_phone_number, '/query/chatapp_phone_number');
  if (pn) query = query.where('chats.phone_number_id', '=', pn);
  if (q.assigned_agent_id) query = query.where('chats.assigned_owner_id', '=', q.assigned_agent_id);
  if (q.unread_only) query = query.where('chats.unread_count', '>', 0);
  if (after)
    query = query.where((eb) =>
      eb.or([eb('chats.last_message_at', '<', after.at), eb.and([eb('chats.last_message_at', '=', after.at), eb('chats.id', '<', after.id)])]),
    );
  const rows = await query
    .orderBy('chats.last_message_at', 'desc')
    .orderBy('chats.id', 'desc')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const more = rows.length > limit && last !== undefined;
  const now = platform.now();
  return {
    data: items.map((r) => chatView(r, now)),
    has_more: more,
    next_cursor: more
      ? encodeCursor(platform.secrets, { workspaceId, operation: 'listChats' }, { t: new Date(last.last_message_at).toISOString(), id: last.id })
      : null,
  };
};

export const listMessages: Handler<operations['listMessages']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const q = request.query;
  const limit = q.limit ?? 20;
  const after = position(platform, workspaceId, 'listMessages', q.cursor);
  const contact = await db.selectFrom('contacts').select('id').where('id', '=', q.contact_id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!contact) throw notFound('contact', '/query/contact_id'); // bad-inputs B2
  const pn = await numberFilter(platform, workspaceId, q.chatapp_phone_number, '/query/chatapp_phone_number');
  let query = db
    .selectFrom('messages')
    .innerJoin('phone_numbers', 'phone_numbers.id', 'messages.phone_number_id')
    .selectAll('messages')
    .select('phone_numbers.display_phone_number as chatapp_phone_number')
    .where('messages.workspace_id', '=', workspaceId)
    .where('messages.contact_id', '=', contact.id);
  if (pn) query = query.where('messages.phone_number_id', '=', pn);
  if (q.direction) query = query.where('messages.direction', '=', q.direction);
  if (after)
    query = query.where((eb) =>
      eb.or([eb('messages.created_at', '<', after.at), eb.and([eb('messages.created_at', '=', after.at), eb('messages.id', '<', after.id)])]),
    );
  const rows = await query
    .orderBy('messages.created_at', 'desc')
    .orderBy('messages.id', 'desc')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const more = rows.length > limit && last !== undefined;
  return {
    data: items.map((row) => messageView(row, platform.config.publicUrl)),
    has_more: more,
    next_cursor: more
      ? encodeCursor(platform.secrets, { workspaceId, operation: 'listMessages' }, { t: new Date(last.created_at).toISOString(), id: last.id })
      : null,
  };
};

/** The customer's latest message in the chat that the provider knows (its wamid), with the chat's number. */
async function latestInbound(platform: Platform, workspaceId: string, chatId: string) {
  return platform.store.db
    .selectFrom('messages')
    .innerJoin('chats', 'chats.id', 'messages.chat_id')
    .select(['messages.provider_message_id', 'messages.created_at', 'chats.phone_number_id'])
    .where('messages.chat_id', '=', chatId)
    .where('messages.workspace_id', '=', workspaceId)
    .where('messages.direction', '=', 'inbound')
    .where('messages.provider_message_id', 'is not', null)
    .orderBy('messages.created_at', 'desc')
    .orderBy('messages.id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

async function resetUnread(platform: Platform, workspaceId: string, chatId: string, now: Date) {
  await platform.store.db
    .updateTable('chats')
    .set({ unread_count: 0, read_at: now })
    .where('id', '=', chatId)
    .where('workspace_id', '=', workspaceId)
    .execute();
}

/**
 * Marks the chat read here, then tells the provider (`status: read` for the customer's latest
 * message, which reads every earlier one too) so the customer sees the blue ticks. The inbox's
 * state is ours and stays changed when the provider cannot be told (the number disconnected, a
 * provider error): that is logged, the answer is still the chat.
 */
export const markChatRead: Handler<operations['markChatRead']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { chatId } = request.params;
  await chatById(platform, workspaceId, chatId);
  const now = platform.now();
  await resetUnread(platform, workspaceId, chatId, now);
  const latest = await latestInbound(platform, workspaceId, chatId);
  if (latest?.provider_message_id) {
    try {
      const sender = await resolveSender(platform, workspaceId, latest.phone_number_id);
      await sender.provider.markRead(sender.providerNumber, latest.provider_message_id);
    } catch (error) {
      request.log.warn({ chatId, error: error instanceof Error ? error.message : String(error) }, 'read receipt not sent to the provider');
    }
  }
  return chatView(await chatById(platform, workspaceId, chatId), now);
};

/** The typing indicator (with a read receipt for the customer's latest message), while a reply can follow. */
export const showTypingIndicator: Handler<operations['showTypingIndicator']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { chatId } = request.params;
  await chatById(platform, workspaceId, chatId);
  const now = platform.now();
  const latest = await latestInbound(platform, workspaceId, chatId);
  if (!latest?.provider_message_id) throw new HttpProblem(422, 'unprocessable', 'The customer has not written in this chat: there is no message to answer.');
  if (!windowOpen(latest.created_at, now))
    throw new HttpProblem(422, 'outside-window', 'The customer has not written in the last 24 hours: no reply can follow the typing indicator.');
  const sender = await resolveSender(platform, workspaceId, latest.phone_number_id);
  try {
    await sender.provider.markRead(sender.providerNumber, latest.provider_message_id, { typing: true });
  } catch (error) {
    throw error instanceof ProviderError ? error.toProblem() : error;
  }
  await resetUnread(platform, workspaceId, chatId, now);
  return chatView(await chatById(platform, workspaceId, chatId), now);
};

export const assignChat: Handler<operations['assignChat']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { chat_id: chatId, agent_id: agentId } = request.body;
  await chatById(platform, workspaceId, chatId);
  if (agentId !== null) {
    // bad-inputs B3: an agent is a member of this workspace with an agent role (listAgents lists the same
    // people); another workspace's member, or one without such a role, is unknown here.
    const agent = await db
      .selectFrom('owners')
      .select('id')
      .where('id', '=', agentId)
      .where('workspace_id', '=', workspaceId)
      .where('role', 'in', AGENT_ROLES)
      .executeTakeFirst();
    if (!agent) throw notFound('agent', '/body/agent_id');
  }
  const now = platform.now();
  await db
    .updateTable('chats')
    .set({ assigned_owner_id: agentId, assigned_at: agentId ? now : null })
    .where('id', '=', chatId)
    .where('workspace_id', '=', workspaceId)
    .execute();
  return chatView(await chatById(platform, workspaceId, chatId), now);
};
