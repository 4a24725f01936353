// The inbound dispatcher's plug-in point: automation (flows), message bots and the chatbot each
// register a responder; the dispatcher (dispatcher.ts, started by automation/setup.ts) claims each
// inbound message once across instances and runs the responders by `order` until one answers true.
// Orders in use: 0 = opt-out and opt-in keywords (contacts/opt-out.ts), 5 = form submissions,
// 10 = a flow run waiting for this contact's reply, 20 = active flows whose trigger matches
// (highest priority first), 25 = sequence keywords, 30 = message bots' keyword replies, 40 = chatbot.
import type { FastifyInstance } from 'fastify';
import type { Platform } from '#server/platform.js';

export interface InboundMessage {
  workspaceId: string;
  messageId: string;
  contactId: string;
  phoneNumberId: string;
  /** The business account of that number, read once by the dispatcher (null: the number is gone). */
  businessAccountId: string | null;
  /** E.164 with a leading `+`. */
  from: string;
  /** The contract's MessageKind (text, interactive, button, image, ...). */
  type: string;
  text?: string;
  /** The id of the button or list row the contact chose (interactive and template button replies). */
  interactiveReplyId?: string;
}

export interface InboundResponder {
  name: string;
  /** lower runs first */
  order: number;
  /** True when the responder handled the message (no later responder runs). */
  respond(platform: Platform, message: InboundMessage): Promise<boolean>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The inbound responders of this instance (made by automation's setup, which runs the dispatcher). */
    inboundResponders: InboundResponders;
  }
}

/** The responders of one instance (tests build several apps in one process). */
export class InboundResponders {
  private readonly responders: InboundResponder[] = [];

  /** Registers a responder; returns a function that removes it. */
  register(responder: InboundResponder): () => void {
    this.responders.push(responder);
    // Stable sort: responders of equal order run in registration order.
    this.responders.sort((a, b) => a.order - b.order);
    return () => {
      const index = this.responders.indexOf(responder);
      if (index >= 0) this.responders.splice(index, 1);
    };
  }

  /** Lowest order first (a copy: responders may unregister while running). */
  list(): InboundResponder[] {
    return [...this.responders];
  }
}

/** Registers a responder on this instance; returns a function that removes it. */
export function registerInboundResponder(app: FastifyInstance, responder: InboundResponder): () => void {
  return app.inboundResponders.register(responder);
}
