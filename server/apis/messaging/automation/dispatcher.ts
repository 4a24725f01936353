// The inbound dispatcher: every instance hears `message.received`; the instance whose insert
// into automation_inbound_claims wins runs the responders (responders.ts) in order until one
// handles the message. The claim makes dispatch at-most-once: an instance that dies mid-way
// leaves that message unanswered rather than answered twice.
import type { PlatformEvent } from '../../../events/bus.js';
import type { Platform } from '../../../platform.js';
import { inboundResponders, type InboundMessage } from './responders.js';

export interface DispatcherOptions {
  log?: (message: string, extra?: object) => void;
  /** Runs before the responders, for every claimed message (sequences stop on a reply). */
  beforeResponders?: (message: InboundMessage) => Promise<void>;
}

async function claim(platform: Platform, messageId: string): Promise<boolean> {
  const row = await platform.store.db
    .insertInto('automation_inbound_claims')
    .values({ message_id: messageId, instance_id: platform.instanceId, claimed_at: platform.now() })
    .onConflict((oc) => oc.column('message_id').doNothing())
    .returning('message_id')
    .executeTakeFirst();
  return Boolean(row);
}

async function messageOf(platform: Platform, event: PlatformEvent): Promise<InboundMessage | null> {
  const d = event.data as Record<string, unknown>;
  if (typeof d.messageId !== 'string' || typeof d.contactId !== 'string' || typeof d.phoneNumberId !== 'string') return null;
  // The number's business account comes with the message, once, for every responder.
  const row = await platform.store.db
    .selectFrom('messages as m')
    .leftJoin('phone_numbers as pn', (join) => join.on('pn.id', '=', d.phoneNumberId as string).onRef('pn.workspace_id', '=', 'm.workspace_id'))
    .select(['m.type', 'm.content', 'm.workspace_id', 'pn.business_account_id'])
    .where('m.id', '=', d.messageId)
    .executeTakeFirst();
  if (!row || row.workspace_id !== event.workspaceId) return null;
  const content = (row.content ?? {}) as { text?: unknown; reply?: { id?: unknown; title?: unknown } };
  const text = typeof content.text === 'string' ? content.text : typeof content.reply?.title === 'string' ? content.reply.title : undefined;
  const replyId = typeof content.reply?.id === 'string' ? content.reply.id : undefined;
  return {
    workspaceId: event.workspaceId,
    messageId: d.messageId,
    contactId: d.contactId,
    phoneNumberId: d.phoneNumberId,
    businessAccountId: row.business_account_id,
    from: typeof d.from === 'string' ? d.from : '',
    type: row.type,
    ...(text !== undefined ? { text } : {}),
    ...(replyId !== undefined ? { interactiveReplyId: replyId } : {}),
  };
}

/** Dispatches one `message.received` event; answers the responder that handled it, or null. */
export async function dispatchInbound(platform: Platform, event: PlatformEvent, options: DispatcherOptions = {}): Promise<string | null> {
  const messageId = (event.data as { messageId?: unknown }).messageId;
  if (typeof messageId !== 'string' || !(await claim(platform, messageId))) return null;
  const message = await messageOf(platform, event);
  if (!message) return null;
  try {
    await options.beforeResponders?.(message);
  } catch (error) {
    options.log?.('inbound pre-dispatch failed', { messageId, error: String(error) });
  }
  for (const responder of inboundResponders(platform)) {
    try {
      if (await responder.respond(platform, message)) return responder.name;
    } catch (error) {
      // One responder failing must not keep the next from answering.
      options.log?.('inbound responder failed', { responder: responder.name, messageId, error: String(error) });
    }
  }
  return null;
}

/** Subscribes the dispatcher; returns a function that stops it and waits for dispatches in flight. */
export function startDispatcher(platform: Platform, options: DispatcherOptions = {}): () => Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  // In the background: a LOGIN message's verification (a client waiting on a stream) goes first.
  const off = platform.bus.subscribe(
    'message.received',
    (event) => {
      const p = dispatchInbound(platform, event, options).catch((error) => options.log?.('inbound dispatch failed', { error: String(error) }));
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    },
    { background: true },
  );
  return async () => {
    off();
    while (inFlight.size) await Promise.allSettled([...inFlight]);
  };
}
