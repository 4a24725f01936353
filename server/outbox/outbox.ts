// The durable webhook outbox. A row per (event, endpoint) is written in the same transaction as
// the change that caused it, so an event exists if and only if its change committed. Workers on
// any number of instances lease due rows with FOR UPDATE SKIP LOCKED, deliver them, and record
// every attempt. A worker that dies holding a lease loses it when `lease_until` passes, and the
// row is delivered again with the same event id and body (at-least-once; receivers dedupe by id).
import type { Kysely, Transaction } from 'kysely';
import { sql } from 'kysely';
import { newId } from '../lib/ids.js';
import type { Database, OutboxTable } from '../store/schema.js';
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
  pollMs?: number;
  random?: () => number;
  log?: (message: string, extra?: object) => void;
}

const CHANNEL = 'outbox_due';
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
    })
    .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing())
    .execute();
  // Wakes idle workers at commit (they also poll, so a lost notification only delays).
  await sql`select pg_notify(${CHANNEL}, '')`.execute(tx);
  return id;
}

export class Outbox {
  private readonly resolvers = new Map<string, DestinationResolver>();
  private readonly now: () => Date;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private running = false;
  private timer?: NodeJS.Timeout;
  private wake?: () => void;
  private loop?: Promise<void>;
  private unlisten?: () => Promise<void>;

  constructor(private readonly options: OutboxOptions) {
    this.now = options.now ?? (() => new Date());
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 16;
    this.pollMs = options.pollMs ?? 1_000;
  }

  register(endpointKind: string, resolver: DestinationResolver): void {
    this.resolvers.set(endpointKind, resolver);
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.unlisten = await this.options.store.listen(CHANNEL, () => this.wake?.());
    this.loop = this.run();
  }

  /** Stops claiming; in-flight attempts finish; rows not started keep no lease. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    await this.unlisten?.();
  }

  private async run() {
    while (this.running) {
      let claimed = 0;
      try {
        claimed = await this.runOnce();
      } catch (error) {
        this.options.log?.('outbox cycle failed', { error: String(error) });
      }
      if (claimed < this.batchSize && this.running) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.timer = setTimeout(resolve, this.pollMs);
        });
        clearTimeout(this.timer);
      }
    }
  }

  /** Claims and delivers one batch of due rows; returns how many were claimed. */
  async runOnce(): Promise<number> {
    const rows = await this.claim();
    await Promise.all(rows.map((row) => this.attempt(row)));
    return rows.length;
  }

  private async claim(): Promise<OutboxRow[]> {
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
          .where('status', '=', 'pending')
          .where('next_attempt_at', '<=', now)
          .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
          .orderBy('next_attempt_at')
          .limit(this.batchSize)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute()) as OutboxRow[];
  }

  private async attempt(row: OutboxRow): Promise<void> {
    const db = this.options.store.db;
    const resolver = this.resolvers.get(row.endpoint_kind);
    const destination = resolver ? await resolver(row.endpoint_id, row.workspace_id) : null;
    if (!destination) {
      await db
        .updateTable('outbox')
        .set({ status: 'failed', last_error: 'endpoint deleted or disabled', lease_until: null, finished_at: this.now() })
        .where('id', '=', row.id)
        .where('leased_by', '=', this.options.instanceId)
        .execute();
      return;
    }
    const started = this.now();
    const t0 = performance.now();
    const result = await this.options.post(destination.url, destination.headers(row.payload, started), row.payload).catch((error) => ({
      error: error instanceof Error ? error.message : String(error),
    }) as PostResult);
    const durationMs = Math.round(performance.now() - t0);
    const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
    const error = ok ? null : (result.error ?? `receiver answered ${result.status}`);
    const delay = ok ? null : retryDelayMs(row.attempts, this.options.random);
    const finished = ok || delay === null || row.attempts >= MAX_ATTEMPTS;
    await db.transaction().execute(async (tx) => {
      await tx
        .insertInto('delivery_attempts')
        .values({
          id: newId('att'),
          outbox_id: row.id,
          attempt: row.attempts,
          started_at: started,
          duration_ms: durationMs,
          status_code: result.status ?? null,
          response_excerpt: result.body?.slice(0, EXCERPT) ?? null,
          error,
        })
        .execute();
      await tx
        .updateTable('outbox')
        .set({
          status: ok ? 'succeeded' : finished ? 'failed' : 'pending',
          lease_until: null,
          leased_by: null,
          last_status_code: result.status ?? null,
          last_error: error,
          next_attempt_at: finished ? started : new Date(started.getTime() + delay!),
          finished_at: finished ? this.now() : null,
        })
        .where('id', '=', row.id)
        .where('leased_by', '=', this.options.instanceId)
        .execute();
    });
  }

  /** Queues a finished or pending row again now, with the same event id and body. */
  async redeliver(outboxId: string, workspaceId: string): Promise<boolean> {
    const res = await this.options.store.db
      .updateTable('outbox')
      .set({ status: 'pending', next_attempt_at: this.now(), finished_at: null })
      .where('id', '=', outboxId)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    this.wake?.();
    return Number(res.numUpdatedRows) === 1;
  }
}
