// The inbound dispatcher. Each inbound message is recorded as due (automation_inbound_claims,
// instance_id null) in the transaction that stores it (an inbound step, events/inbound-steps.ts).
// The instance whose UPDATE claims the row runs the responders (responders.ts) in order until one
// handles the message. Instances claim on the `message.received` notification, and, since a
// notification can be lost (a LISTEN connection reconnecting), sweep the due rows at start, when
// their LISTEN connection is back, and every sweepMs (INBOUND_SWEEP_MS, else WORKER_IDLE_MS: a
// safety re-check, so an idle dispatcher runs one query a minute). The claim makes dispatch at-most-once: an
// instance that dies mid-way leaves that message unanswered rather than answered twice.
import type { FastifyInstance } from 'fastify';
import type { Transaction } from 'kysely';
import type { StoredInbound } from '#server/events/inbound-steps.js';
import type { Platform } from '#server/platform.js';
import { DEFAULT_IDLE_MS, yieldToRequests } from '#server/lib/wake-up.js';
import type { Database } from '#server/store/schema.js';
import type { InboundMessage } from './responders.js';

export interface DispatcherOptions {
  log?: (message: string, extra?: object) => void;
  /** Runs before the responders, for every claimed message (sequences stop on a reply). */
  beforeResponders?: (message: InboundMessage) => Promise<void>;
  /** How often due messages are swept without a reason (INBOUND_SWEEP_MS). */
  sweepMs?: number;
}

const SWEEP_BATCH = 20;

/** The inbound step: the message is due for dispatch, recorded with it. */
export async function recordDue(trx: Transaction<Database>, platform: Platform, message: StoredInbound): Promise<void> {
  await trx
    .insertInto('automation_inbound_claims')
    .values({ message_id: message.messageId, instance_id: null, claimed_at: null, received_at: platform.now() })
    .onConflict((oc) => oc.column('message_id').doNothing())
    .execute();
}

async function claim(platform: Platform, messageId: string): Promise<boolean> {
  const row = await platform.store.db
    .updateTable('automation_inbound_claims')
    .set({ instance_id: platform.instanceId, claimed_at: platform.now() })
    .where('message_id', '=', messageId)
    .where('instance_id', 'is', null)
    .returning('message_id')
    .executeTakeFirst();
  return Boolean(row);
}

/** Claims up to `limit` due messages, oldest first, skipping rows another instance is claiming. */
async function claimDue(platform: Platform, limit: number): Promise<string[]> {
  const rows = await platform.store.db
    .updateTable('automation_inbound_claims')
    .set({ instance_id: platform.instanceId, claimed_at: platform.now() })
    .where('message_id', 'in', (eb) =>
      eb
        .selectFrom('automation_inbound_claims')
        .select('message_id')
        .where('instance_id', 'is', null)
        .orderBy('received_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .where('instance_id', 'is', null)
    .returning('message_id')
    .execute();
  return rows.map((r) => r.message_id);
}

async function messageOf(platform: Platform, messageId: string): Promise<InboundMessage | null> {
  // The number's business account comes with the message, once, for every responder.
  const row = await platform.store.db
    .selectFrom('messages as m')
    .innerJoin('contacts as c', 'c.id', 'm.contact_id')
    .leftJoin('phone_numbers as pn', (join) => join.onRef('pn.id', '=', 'm.phone_number_id').onRef('pn.workspace_id', '=', 'm.workspace_id'))
    .select(['m.type', 'm.content', 'm.workspace_id', 'm.contact_id', 'm.phone_number_id', 'c.phone', 'pn.business_account_id'])
    .where('m.id', '=', messageId)
    .where('m.direction', '=', 'inbound')
    .executeTakeFirst();
  if (!row?.phone_number_id) return null;
  const content = (row.content ?? {}) as { text?: unknown; reply?: { id?: unknown; title?: unknown } };
  const text = typeof content.text === 'string' ? content.text : typeof content.reply?.title === 'string' ? content.reply.title : undefined;
  const replyId = typeof content.reply?.id === 'string' ? content.reply.id : undefined;
  return {
    workspaceId: row.workspace_id,
    messageId,
    contactId: row.contact_id,
    phoneNumberId: row.phone_number_id,
    businessAccountId: row.business_account_id,
    from: row.phone,
    type: row.type,
    ...(text !== undefined ? { text } : {}),
    ...(replyId !== undefined ? { interactiveReplyId: replyId } : {}),
  };
}

/** Runs the responders for a message this instance has claimed; answers the one that handled it. */
async function respond(app: FastifyInstance, messageId: string, options: DispatcherOptions): Promise<string | null> {
  const { platform } = app;
  const message = await messageOf(platform, messageId);
  if (!message) return null;
  try {
    await options.beforeResponders?.(message);
  } catch (error) {
    options.log?.('inbound pre-dispatch failed', { messageId, error: String(error) });
  }
  for (const responder of app.inboundResponders.list()) {
    try {
      if (await responder.respond(platform, message)) return responder.name;
    } catch (error) {
      // One responder failing must not keep the next from answering.
      options.log?.('inbound responder failed', { responder: responder.name, messageId, error: String(error) });
    }
  }
  return null;
}

/** Dispatches one due message if this instance claims it; answers the responder that handled it, or null. */
export async function dispatchInbound(app: FastifyInstance, messageId: string, options: DispatcherOptions = {}): Promise<string | null> {
  if (!(await claim(app.platform, messageId))) return null;
  return respond(app, messageId, options);
}

/** Claims and dispatches every due message (what lost notifications left); answers how many. */
export async function sweepInbound(app: FastifyInstance, options: DispatcherOptions = {}, running: () => boolean = () => true): Promise<number> {
  let total = 0;
  while (running()) {
    const ids = await claimDue(app.platform, SWEEP_BATCH);
    for (const id of ids) await respond(app, id, options);
    total += ids.length;
    if (ids.length < SWEEP_BATCH) break;
    await yieldToRequests();
  }
  return total;
}

/** Subscribes the dispatcher and starts its sweeps; returns a function that stops it and waits for dispatches in flight. */
export function startDispatcher(app: FastifyInstance, options: DispatcherOptions = {}): () => Promise<void> {
  const { platform } = app;
  const inFlight = new Set<Promise<unknown>>();
  let running = true;
  const track = (p: Promise<unknown>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  let sweeping: Promise<unknown> | undefined;
  const sweep = () => {
    if (!running || sweeping) return;
    sweeping = sweepInbound(app, options, () => running)
      .catch((error) => options.log?.('inbound sweep failed', { error: String(error) }))
      .finally(() => (sweeping = undefined));
    track(sweeping);
  };
  // In the background: the notification only wakes; the row says what is due.
  const off = platform.bus.subscribe(
    'message.received',
    (event) => {
      const messageId = (event.data as { messageId?: unknown }).messageId;
      if (typeof messageId !== 'string') return;
      track(dispatchInbound(app, messageId, options).catch((error) => options.log?.('inbound dispatch failed', { error: String(error) })));
    },
    { background: true },
  );
  const offReconnect = platform.store.onReconnect(sweep);
  const timer = setInterval(sweep, options.sweepMs ?? DEFAULT_IDLE_MS);
  timer.unref();
  sweep();
  return async () => {
    running = false;
    off();
    offReconnect();
    clearInterval(timer);
    while (inFlight.size) await Promise.allSettled([...inFlight]);
  };
}
