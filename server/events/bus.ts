// Platform events fanned out to every server instance through PostgreSQL LISTEN/NOTIFY
// (PGlite supports it too). Every event takes the same path, this instance included, so a
// subscriber behaves the same whichever instance caused the event. Events published inside a
// transaction are delivered at its commit and never if it rolls back.
// Events are notifications (small, ids and states); work that must not be lost goes through
// the outbox instead.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Store } from '../store/db.js';
import type { Database } from '../store/schema.js';

export interface PlatformEvent {
  type: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

type Subscriber = (event: PlatformEvent) => void | Promise<void>;

export interface SubscribeOptions {
  /**
   * Started on the next turn of the event loop rather than at once, so that the subscribers a
   * client is waiting on go first. On the embedded store queries take turns on one connection,
   * and a sign-in's `verified` push (the Login API's stream) otherwise waited behind the
   * automation's queries on the same message.
   */
  background?: boolean;
}

interface Subscription {
  subscriber: Subscriber;
  background: boolean;
  /** False once unsubscribed: a background start still pending then does not happen. */
  active: boolean;
}

const CHANNEL = 'platform_events';
/** NOTIFY payloads must stay under 8,000 bytes. */
const MAX_PAYLOAD = 7900;

export class EventBus {
  private readonly subscribers = new Map<string, Set<Subscription>>();
  private unlisten?: () => Promise<void>;

  constructor(
    private readonly store: Store,
    private readonly onError: (error: unknown, event: PlatformEvent) => void = () => {},
  ) {}

  async start(): Promise<void> {
    this.unlisten = await this.store.listen(CHANNEL, (payload) => this.dispatch(payload));
  }

  async stop(): Promise<void> {
    await this.unlisten?.();
    this.unlisten = undefined;
  }

  /** Subscribes to one event type, or `*` for all; returns an unsubscribe function. */
  subscribe(type: string, subscriber: Subscriber, options: SubscribeOptions = {}): () => void {
    let set = this.subscribers.get(type);
    if (!set) this.subscribers.set(type, (set = new Set()));
    const subscription = { subscriber, background: options.background ?? false, active: true };
    set.add(subscription);
    return () => {
      subscription.active = false;
      set!.delete(subscription);
    };
  }

  /** Publishes now, or at the commit of `tx` when given. */
  async publish(event: PlatformEvent, tx?: Transaction<Database> | Kysely<Database>): Promise<void> {
    const payload = JSON.stringify(event);
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) throw new Error(`event ${event.type} is too large for NOTIFY; publish ids, not documents`);
    await sql`select pg_notify(${CHANNEL}, ${payload})`.execute(tx ?? this.store.db);
  }

  /** Publishes several at the commit of `tx`, in order, in one statement. */
  async publishAll(events: PlatformEvent[], tx: Transaction<Database> | Kysely<Database>): Promise<void> {
    if (!events.length) return;
    const payloads = events.map((event) => {
      const payload = JSON.stringify(event);
      if (Buffer.byteLength(payload) > MAX_PAYLOAD) throw new Error(`event ${event.type} is too large for NOTIFY; publish ids, not documents`);
      return payload;
    });
    await sql`select pg_notify(${CHANNEL}, p) from unnest(${payloads}::text[]) with ordinality as t(p, n) order by n`.execute(tx);
  }

  private dispatch(payload: string) {
    let event: PlatformEvent;
    try {
      event = JSON.parse(payload);
    } catch {
      return;
    }
    for (const subscription of [...(this.subscribers.get(event.type) ?? []), ...(this.subscribers.get('*') ?? [])]) {
      const run = () =>
        Promise.resolve()
          .then(() => subscription.subscriber(event))
          .catch((error) => this.onError(error, event));
      if (!subscription.background) void run();
      else setImmediate(() => subscription.active && run());
    }
  }
}
