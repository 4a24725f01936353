// Shared steps of the bots and forms tests: a tenant with a sandbox number (from the inbox tests),
// a customer writing in through the sandbox phone, and what the app's own inbound dispatcher did
// with the message (which responders ran, which one handled it).
import type { FastifyInstance } from 'fastify';
import type { InboundContent } from '#server/providers/types.js';
import { registerInboundResponder, type InboundMessage } from '#server/apis/messaging/automation/responders.js';
import { sandbox, type Tenant } from '../inbox/support.js';
import { eventually } from '#test/support/eventually.js';

export { tenant, cloudTenant, sandbox, storeTemplate, PROBLEMS, type Tenant } from '../inbox/support.js';

interface Outcome {
  ran: string[];
  handledBy: string | null;
  done: boolean;
}

const observers = new WeakMap<FastifyInstance, Map<string, Outcome>>();

/**
 * Watches the app's real inbound dispatcher (started on ready, it claims each message once and
 * runs the responders): each registered responder is wrapped to record that it ran and whether it
 * handled the message, and a last responder marks messages no one handled. Tests must not run the
 * responders themselves: the dispatcher already does, and a second run would answer twice.
 */
function observe(app: FastifyInstance): Map<string, Outcome> {
  let outcomes = observers.get(app);
  if (outcomes) return outcomes;
  const seen = (outcomes = new Map<string, Outcome>());
  observers.set(app, seen);
  const entry = (id: string) => {
    let o = seen.get(id);
    if (!o) seen.set(id, (o = { ran: [], handledBy: null, done: false }));
    return o;
  };
  for (const responder of app.inboundResponders.list()) {
    const original = responder.respond.bind(responder);
    responder.respond = async (platform, message: InboundMessage) => {
      const o = entry(message.messageId);
      o.ran.push(responder.name);
      const handled = await original(platform, message);
      if (handled) Object.assign(o, { handledBy: responder.name, done: true });
      return handled;
    };
  }
  registerInboundResponder(app, {
    name: 'test.unhandled',
    order: Number.MAX_SAFE_INTEGER,
    respond: async (_platform, message) => {
      entry(message.messageId).done = true;
      return false;
    },
  });
  return seen;
}

/** Waits until the dispatcher finished with a message: the responders that ran and the one that handled it. */
export async function dispatched(app: FastifyInstance, messageId: string): Promise<{ ran: string[]; handledBy: string | null }> {
  const outcomes = observe(app);
  const o = await eventually(() => outcomes.get(messageId)?.done && outcomes.get(messageId)!, {
    within: 15_000,
    what: `the dispatcher to finish with ${messageId}`,
    app,
  });
  return { ran: o.ran.filter((n) => n !== 'test.unhandled'), handledBy: o.handledBy };
}

/** The customer writes `content` (text by default) to the tenant's sandbox number; answers the stored message id. */
export async function customerSends(app: FastifyInstance, t: Tenant, from: string, content: string | InboundContent, at?: Date): Promise<string> {
  observe(app); // before the message, so its dispatch is seen
  const message: InboundContent = typeof content === 'string' ? { type: 'text', text: { body: content } } : content;
  const { providerMessageId } = await sandbox(app).simulateInbound({ phoneNumberId: t.providerPnId, from, name: 'Lena', message, ...(at ? { at } : {}) });
  const row = await app.platform.store.db.selectFrom('messages').select('id').where('provider_message_id', '=', providerMessageId).executeTakeFirstOrThrow();
  return row.id;
}

/** The customer writes and the dispatcher runs the responders: the message id and who handled it. */
export async function customerAsks(app: FastifyInstance, t: Tenant, from: string, text: string, at?: Date) {
  const id = await customerSends(app, t, from, text, at);
  return { id, ...(await dispatched(app, id)) };
}

/** The texts sent to `phone` by the workspace, oldest first. */
export async function repliesTo(app: FastifyInstance, t: Tenant, phone: string): Promise<string[]> {
  const rows = await app.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.content', 'messages.type'])
    .where('messages.workspace_id', '=', t.workspaceId)
    .where('messages.direction', '=', 'outbound')
    .where('contacts.phone', '=', phone)
    .orderBy('messages.created_at')
    .execute();
  return rows.map((r) => {
    const c = r.content as { text?: string; media?: { url?: string }; template?: { name?: string } };
    return c.text ?? c.media?.url ?? `template:${c.template?.name}`;
  });
}
