// The durable webhook outbox. A row per (event, endpoint) is written in the same transaction as
// the change that caused it, so an event exists if and only if its change committed. Workers on
// any number of instances lease due rows with FOR UPDATE SKIP LOCKED, deliver them, and record
// every attempt. A worker that dies holding a lease loses it when `lease_until` passes, and the
// row is delivered again with the same event id and body (at-least-once; receivers dedupe by id).
// A worker with nothing to claim sleeps until its next due row (a retry's time, or the lease
// expiry of a row another instance holds), until `outbox_due` is notified (enqueue, redeliver) or
// an attempt finishes, or at most `idleMs`: an idle outbox runs no query.
import { currentTraceparent, inBackgroundSpan } from '../ops/tracing.js';
import type { Kysely, SqlBool, Transaction } from 'kysely';
import { sql } from 'kysely';
import { newId } from '../lib/ids.js';
import { DEFAULT_IDLE_MS, msUntil, WakeUp, yieldToRequests } from '#server/lib/wake-up.js';
import type { Insertable } from 'kysely';
import type { Database, DeliveryAttemptsTable, OutboxTable } from '../store/schema.js';
import type { Store } from '../store/db.js';
import { MAX_ATTEMPTS, retryDelayMs } from './schedule.js';

export type OutboxRow = { [K in keyof OutboxTable]: OutboxTable[K] extends import('kysely').ColumnType<infer S, any, any> ? S : OutboxTable[K] };

export interface NewDelivery {
  workspaceId: string;
  endpointKind: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The exact body bytes every attempt sends. */
  payload: string;
}

/** Where and how to deliver to one endpoint, looked up at each attempt (rotation, deletion). */
export interface Destination {
  url: string;
  /** Headers for this attempt (the signature is fresh each time; the body is not). */
  headers(payload: string, now: Date): Record<string, string>;
}

/** Resolves an endpoint; null when it is gone or disabled, which cancels its pending rows. */
export type DestinationResolver = (endpointId: string, workspaceId: string) => Promise<Destination | null>;

export interface PostResult {
  status?: number;
  body?: string;
  error?: string;
}

/** Sends one attempt; must not follow redirects and must bound time and response size. */
export type Poster = (url: string, headers: Record<string, string>, body: string) => Promise<PostResult>;

export interface OutboxOptions {
  store: Store;
  post: Poster;
  instanceId: string;
  now?: () => Date;
  leaseMs?: number;
  batchSize?: number;
  /** The longest the worker sleeps with nothing due (a lost notification is found then). */
  idleMs?: number;
  random?: () => number;
  log?: (message: string, extra?: object) => void;
  /** Told each attempt's outcome (the operations counters, server/ops/activity.ts). */
  onAttempt?: (outcome: 'succeeded' | 'retry' | 'failed') => void;
}

const CHANNEL = 'outbox_due';

/** What one attempt (or the cancellation of a row whose endpoint is gone) writes. */
interface Outcome {
  id: string;
  status: 'succeeded' | 'failed' | 'pending';
  statusCode?: number | null;
  error: string | null;
  next?: Date;
  finished: Date | null;
  attempt?: Insertable<DeliveryAttemptsTable>;
}

const EXCERPT = 2048;

export async function enqueue(tx: Transaction<Database> | Kysely<Database>, delivery: NewDelivery, at: Date = new Date()): Promise<string> {
  const id = newId('dlv');
  await tx
    .insertInto('outbox')
    .values({
      id,
      workspace_id: delivery.workspaceId,
      endpoint_kind: delivery.endpointKind,
      endpoint_id: delivery.endpointId,
      event_id: delivery.eventId,
      event_type: delivery.eventType,
      payload: delivery.payload,
      next_attempt_at: at,
      trace_context: currentTraceparent(), // the delivery's trace links to this request's
    })
    .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing())
    .execute();
  // Wakes idle workers at commit (they re-check every idleMs, so a lost notification only delays).
  await sql`select pg_notify(${CHANNEL}, '')`.execute(tx);
  return id;
}

export class Outbox {
  private readonly resolvers = new Map<string, DestinationResolver>();
  private readonly now: () => Date;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly idleMs: number;
  private running = false;
  // A wake-up that comes while the worker claims (a row enqueued, an attempt finished) is kept:
  // the claim or the due time read after it may have missed what it announced, and the idle
  // re-check is far away, so the sleep after that cycle is skipped.
  private readonly wakeUp = new WakeUp();
  private loop?: Promise<void>;
  private unlisten?: () => Promise<void>;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: OutboxOptions) {
    this.now = options.now ?? (() => new Date());
    // The lease must outlive one attempt (the webhook client times out at 10 s), or a slow
    // receiver would get the row twice. OUTBOX_LEASE_MS shortens it for the fault tests (the
    // platform passes it from the configuration).
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 32;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  }

  register(endpointKind: string, resolver: DestinationResolver): void {
    this.resolvers.set(endpointKind, resolver);
    this.wakeUp.wake(); // rows of this kind may have waited for it
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const unlisten = await this.options.store.listen(CHANNEL, () => this.wakeUp.wake());
    // Rows enqueued while the LISTEN connection was away woke no one: claim at once when it is back
    // (the re-check would find them within idleMs anyway).
    const offReconnect = this.options.store.onReconnect(() => this.wakeUp.wake());
    this.unlisten = async () => {
      offReconnect();
      await unlisten();
    };
    this.loop = this.run();
  }

  /** Stops claiming; in-flight attempts finish; rows not started keep no lease. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp.wake();
    await this.loop;
    await this.unlisten?.();
  }

  // Up to batchSize attempts run at once, and freed slots are filled as they add up: a receiver
  // that stalls until the timeout holds one slot, not the rows behind it (bad-inputs F5). Claiming
  // once a quarter of the slots is free, not for every single one, keeps a burst from costing a
  // claim query per delivery.
  private async run() {
    while (this.running) {
      const free = this.batchSize - this.inFlight.size;
      let claimed = 0;
      const claiming = free >= Math.ceil(this.batchSize / 4) || (free > 0 && this.inFlight.size === 0);
      if (claiming) {
        this.wakeUp.forget(); // this claim reads what the wake-ups so far announced
        try {
          const rows = await this.claim(free);
          claimed = rows.length;
          for (const row of rows) this.track(this.attempt(row));
        } catch (error) {
          this.options.log?.('outbox cycle failed', { error: String(error) });
        }
      }
      // Sleep until a notification, a finished attempt or the next due row, unless every free
      // slot was just filled and more rows may be due; then let requests in before the next claim.
      // With the slots busy, no claim was made: the next finished attempt wakes the worker.
      if ((free <= 0 || claimed < free) && this.running) {
        await this.wakeUp.sleep(claiming ? await this.untilDue() : this.idleMs);
      } else {
        await yieldToRequests();
      }
    }
    await Promise.all(this.inFlight);
  }

  private track(attempt: Promise<void>) {
    const tracked = attempt
      .catch((error) => this.options.log?.('outbox attempt failed', { error: String(error) }))
      .finally(() => {
        this.inFlight.delete(tracked);
        this.wakeUp.wake();
      });
    this.inFlight.add(tracked);
  }

  /**
   * How long to sleep: until the earliest pending row this instance can deliver is due (its next
   * attempt, or the end of the lease another instance holds on it), at most idleMs. A row due
   * already but not claimed (another claim holds it locked) is looked at again after a second.
   */
  private async untilDue(): Promise<number> {
    const kinds = [...this.resolvers.keys()];
    if (!kinds.length) return this.idleMs;
    try {
      const row = await this.options.store.db
        .selectFrom('outbox')
        .select(sql<Date | null>`min(greatest(next_attempt_at, lease_until))`.as('due'))
        .where(sql<SqlBool>`status = 'pending'`)
        .where('endpoint_kind', 'in', kinds)
        .executeTakeFirst();
      return msUntil(row?.due ? new Date(row.due) : null, this.now(), this.idleMs, 1_000);
    } catch (error) {
      this.options.log?.('outbox cycle failed', { error: String(error) });
      return 1_000;
    }
  }

  /** Claims and delivers one batch of due rows; returns how many were claimed. */
  async runOnce(): Promise<number> {
    const rows = await this.claim();
    await Promise.all(rows.map((row) => this.attempt(row)));
    return rows.length;
  }

  private async claim(limit = this.batchSize): Promise<OutboxRow[]> {
    // Only kinds this instance can resolve: the worker starts with the platform, before the
    // areas register their resolvers, and a row claimed then must not read as "endpoint deleted".
    const kinds = [...this.resolvers.keys()];
    if (!kinds.length) return [];
    const now = this.now();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const db = this.options.store.db;
    return (await db
      .updateTable('outbox')
      .set((eb) => ({ lease_until: leaseUntil, leased_by: this.options.instanceId, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('outbox')
          .select('id')
          .where(sql<SqlBool>`status = 'pending'`) // a literal: a generic plan can use outbox_due
          .where('endpoint_kind', 'in', kinds)
          .where('next_attempt_at', '<=', now)
          .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
          .orderBy('next_attempt_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute()) as OutboxRow[];
  }

  private attempt(row: OutboxRow): Promise<void> {
    // A trace of its own, linked to the request that queued it (server/ops/tracing.ts).
    const attributes = { 'chatapp.event_type': row.event_type, 'chatapp.attempt': row.attempts };
    return inBackgroundSpan('webhook delivery', row.trace_context, attributes, () => this.deliver(row));
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const destination = await this.resolve(row);
    if (!destination) return this.record({ id: row.id, status: 'failed', error: 'endpoint deleted or disabled', finished: this.now() });
    const started = this.now();
    const t0 = performance.now();
    const result = await this.options.post(destination.url, destination.headers(row.payload, started), row.payload).catch(
      (error) =>
        ({
          error: error instanceof Error ? error.message : String(error),
        }) as PostResult,
    );
    const durationMs = Math.round(performance.now() - t0);
    // The schedule counts from the end of the attempt, a timeout included (as Svix and Stripe
    // do): a receiver that took 10 s to fail gets the whole delay before the next attempt.
    const ended = this.now();
    const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
    const error = ok ? null : (result.error ?? `receiver answered ${result.status}`);
    const delay = ok ? null : retryDelayMs(row.attempts, this.options.random);
    const finished = ok || delay === null || row.attempts >= MAX_ATTEMPTS;
    this.options.onAttempt?.(ok ? 'succeeded' : finished ? 'failed' : 'retry');
    return this.record({
      id: row.id,
      status: ok ? 'succeeded' : finished ? 'failed' : 'pending',
      statusCode: result.status ?? null,
      error,
      next: finished ? started : new Date(ended.getTime() + delay!),
      finished: finished ? ended : null,
      attempt: {
        id: newId('att'),
        outbox_id: row.id,
        attempt: row.attempts,
        started_at: started,
        duration_ms: durationMs,
        status_code: result.status ?? null,
        response_excerpt: result.body?.slice(0, EXCERPT) ?? null,
        error,
      },
    });
  }

  // Rows leased together mostly share an endpoint: one lookup serves the attempts that need it
  // at the same moment (each attempt still sees the endpoint as it is now: rotation, deletion).
  private readonly resolving = new Map<string, Promise<Destination | null>>();
  private resolve(row: OutboxRow): Promise<Destination | null> {
    const resolver = this.resolvers.get(row.endpoint_kind);
    if (!resolver) return Promise.resolve(null);
    const key = `${row.endpoint_kind}:${row.workspace_id}:${row.endpoint_id}`;
    let pending = this.resolving.get(key);
    if (!pending) {
      pending = resolver(row.endpoint_id, row.workspace_id).finally(() => this.resolving.delete(key));
      this.resolving.set(key, pending);
    }
    return pending;
  }

  // Outcomes of attempts that finish together are written in one transaction: one insert of the
  // attempts and one update of their rows, instead of a transaction per delivery (the store's
  // round trips bounded the delivery rate). Each attempt still waits for its own write.
  private queued: { outcome: Outcome; done: (error?: unknown) => void }[] = [];
  private flushScheduled = false;
  private record(outcome: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push({ outcome, done: (error) => (error ? reject(error) : resolve()) });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const group = this.queued.splice(0);
    this.flushScheduled = false;
    try {
      await this.options.store.db.transaction().execute(async (tx) => {
        const attempts = group.flatMap((g) => (g.outcome.attempt ? [g.outcome.attempt] : []));
        if (attempts.length) await tx.insertInto('delivery_attempts').values(attempts).execute();
        // A row without an attempt (endpoint gone) keeps its last status code and due time.
        const values = sql.join(
          group.map(
            ({ outcome: o }) =>
              sql`(${o.id}::text, ${o.status}::text, ${o.attempt !== undefined}::boolean, ${o.statusCode ?? null}::int, ${o.error}::text, ${o.next ?? null}::timestamptz, ${o.finished}::timestamptz)`,
          ),
        );
        await sql`update outbox as o set status = v.status, lease_until = null, leased_by = null,
            last_status_code = case when v.attempted then v.code else o.last_status_code end,
            last_error = v.error, next_attempt_at = coalesce(v.next, o.next_attempt_at), finished_at = v.finished
          from (values ${values}) as v(id, status, attempted, code, error, next, finished)
          where o.id = v.id and o.leased_by = ${this.options.instanceId}`.execute(tx);
      });
      for (const g of group) g.done();
    } catch (error) {
      for (const g of group) g.done(error);
    }
  }

  /** Queues a finished or pending row again now, with the same event id and body. */
  async redeliver(outboxId: string, workspaceId: string): Promise<boolean> {
    const res = await this.options.store.db
      .updateTable('outbox')
      .set({ status: 'pending', next_attempt_at: this.now(), finished_at: null })
      .where('id', '=', outboxId)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    // Every instance's worker: the one that claims it may be asleep until idleMs.
    await this.options.store.notify(CHANNEL, '');
    this.wakeUp.wake();
    return Number(res.numUpdatedRows) === 1;
  }
}
