// Steps that run in the transaction that stores an inbound message (the provider webhook,
// messaging/provider/webhook.ts), registered by the areas that act on inbound messages: Login
// verifies a LOGIN, kanban places the chat, automation records the message as due for dispatch.
// Whatever must not be lost when a notification is (a LISTEN connection reconnecting) is done, or
// durably recorded, here: it commits with the message or not at all, and a failure makes the
// provider retry the delivery. The `message.received` notification only wakes what runs later.
import type { Transaction } from 'kysely';
import type { Platform } from '../platform.js';
import type { Database } from '../store/schema.js';

export interface StoredInbound {
  workspaceId: string;
  messageId: string;
  contactId: string;
  phoneNumberId: string;
  /** The number's business account (null: none). */
  businessAccountId: string | null;
  chatId: string;
  /** E.164 with a leading `+`. */
  from: string;
  /** The contract's MessageKind. */
  type: string;
  /** The text of a text message (also when too long for the notification). */
  text?: string;
}

export type InboundStep = (trx: Transaction<Database>, platform: Platform, message: StoredInbound) => Promise<void>;
type Prepare = (texts: string[]) => Promise<unknown> | undefined;

interface Registered {
  step: InboundStep;
  /**
   * Runs before the delivery's transaction opens: what the step needs read outside it (a cache
   * that must not be filled from a transaction that may roll back; on the embedded store, one
   * connection, a query outside an open transaction would wait for it forever). Given the texts
   * of the delivery's text messages, so a step can skip deliveries it will not act on.
   */
  prepare?: Prepare;
}

/** The steps of one instance by name, in registration order (`platform.inboundSteps`). */
export type InboundStepRegistry = Map<string, Registered>;

/** Registers a step under `name` on this instance (again: replaces it); returns its removal. */
export function registerInboundStep(platform: Platform, name: string, step: InboundStep, prepare?: Prepare): () => void {
  const steps = platform.inboundSteps;
  const entry = { step, prepare };
  steps.set(name, entry);
  return () => {
    if (steps.get(name) === entry) steps.delete(name);
  };
}

/** Runs every step's preparation; call before opening the delivery's transaction. */
export async function prepareInboundSteps(platform: Platform, texts: string[]): Promise<void> {
  for (const { prepare } of [...platform.inboundSteps.values()]) await prepare?.(texts);
}

/** Runs every step, in registration order, in the delivery's transaction. */
export async function runInboundSteps(trx: Transaction<Database>, platform: Platform, message: StoredInbound): Promise<void> {
  for (const { step } of [...platform.inboundSteps.values()]) await step(trx, platform, message);
}
