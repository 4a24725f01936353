// The provider webhook's durable inbox, as Stripe and GitHub advise webhook receivers to work:
// verify, store durably, acknowledge, process asynchronously. A signed delivery whose body passed
// validation is either processed at once (nothing else is arriving: the caller sees its effects
// when the 200 comes, as before) or, under a burst, stored in `provider_deliveries` and answered
// 200 once the insert committed. Deliveries arriving in the same turn of the event loop share one
// multi-row INSERT, each answered when it commits. A worker on every instance claims stored rows
// with a lease (FOR UPDATE SKIP LOCKED, so instances share the work) and runs
// `processProviderPayload` with the row's deletion in the delivery's own transaction: the row
// goes if and only if the effects commit, a crash re-runs it at most, and dedupe by wamid and
// forward-only statuses make a re-run harmless. The worker wakes on a signal from this instance,
// on NOTIFY from the others, on start, and when the earliest retry or another instance's lease
// is due, or after pollMs (PROVIDER_INBOX_POLL_MS, else WORKER_IDLE_MS) with nothing due, so an
// idle inbox runs no query and a lost notification or a LISTEN reconnect only delays; it leaves the single JS thread to ingest while deliveries arrive, taking
// a minimum share so a constant stream cannot starve processing. A failed attempt is retried with
// backoff; after MAX_ATTEMPTS the row is kept with its error (poison) and logged, never retried.
// The database out of reach is not a failed attempt (retried after the first delay, not counted),
// and rows a connection's end left leased to a live worker are claimed again by it at once
// (workerId), so a LOGIN caught in an outage is verified about a second after it ends.
import { randomUUID } from 'node:crypto';
import { currentTraceparent, inBackgroundSpan } from '#server/ops/tracing.js';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import { newId } from '#server/lib/ids.js';
import { DEFAULT_IDLE_MS, msUntil, WakeUp } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import { causedByUnavailable } from '#server/store/unavailable.js';
import { processProviderPayload, processProviderPayloads } from './webhook.js';
import { setupProviderSignature } from './signature.js';

type Payload = components['schemas']['ProviderWebhookPayload'];
type Row = { id: string; seq: string; lane: number; payload: string; attempts: number; trace_context: string | null };

/**
 * Claim order (migration 042): deliveries that carry inbound messages (a customer writing, a LOGIN
 * to verify) before those of statuses only, so a sign-in never waits behind a campaign's statuses.
 */
export const LANE_MESSAGES = 0;
export const LANE_STATUSES = 1;

/** The lane of a delivery: statuses only (or nothing to apply) go behind anything with messages. */
export function laneOf(payload: Payload): number {
  const messages = payload.entry?.some((e) => e.changes?.some((c) => (c.value?.messages?.length ?? 0) > 0));
  return messages ? LANE_MESSAGES : LANE_STATUSES;
}

const CHANNEL = 'provider_inbox';
/** Poison rows are kept this long for inspection, then pruned. */
const KEEP_FAILED_MS = 30 * 24 * 60 * 60 * 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** A status kept for a message not yet recorded (webhook.ts) waits this long, then is pruned. */
const KEEP_EARLY_STATUS_MS = 24 * 60 * 60 * 1000;

export interface ProviderInboxOptions {
  platform: Platform;
  log: FastifyBaseLogger;
  /** How long a claim holds its rows (another instance takes them after). */
  leaseMs?: number;
  /** The longest the worker sleeps with nothing due (a lost notification is found then). */
  pollMs?: number;
  /** Rows per claim; each lane's rows of a claim are applied together in one transaction. */
  claimSize?: number;
  /** Attempts before a delivery is kept as poison. */
  maxAttempts?: number;
  /** Milliseconds before attempt `attempt + 1`. */
  retryDelayMs?: (attempt: number) => number;
  /** The least share of the thread the worker takes while deliveries keep arriving. */
  minShare?: number;
  /** The ingest counts as quiet once nothing arrived for this long. */
  quietMs?: number;
  /** A delivery is processed inline while at most this many are being received (itself included). */
  inlineMax?: number;
  /** Rows per INSERT at most. */
  maxBatchRows?: number;
}

/** Quadrupling from 1 s up to 15 minutes: 8 attempts span about 35 minutes. */
export const defaultRetryDelayMs = (attempt: number) => Math.min(15 * 60_000, 1000 * 2 ** (2 * (attempt - 1)));

declare module 'fastify' {
  interface FastifyInstance {
    /** The provider webhook's inbox of this instance (setupProviderInbox). */
    providerInbox: ProviderInbox;
  }
}

export class ProviderInbox {
  private readonly platform: Platform;
  private readonly log: FastifyBaseLogger;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly claimSize: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly minShare: number;
  private readonly quietMs: number;
  private readonly inlineMax: number;
  private readonly maxBatchRows: number;
  private readonly maxFlushes: number;
  /**
   * `leased_by` of this worker's claims. The worker claims again only once everything it claimed
   * before is deleted, recorded as failed or released, so a row still leased by it at a claim is
   * an orphan (the answer to its claim was lost, or its failure could not be recorded: the
   * connection ended) and is claimed again at once rather than after the lease.
   */
  readonly workerId: string;

  /** What this instance did: processed inline, stored, processed from the inbox, found done by another worker, failed attempts. */
  readonly stats = { inline: 0, stored: 0, processed: 0, skipped: 0, failed: 0 };
  /** Deliveries in `receive` now. */
  private ingesting = 0;
  private lastIngestAt = -Infinity;
  private queue: { payload: string; lane: number; done: (error?: unknown) => void }[] = [];
  private flushScheduled = false;
  /** INSERTs under way. */
  private flushing = 0;
  /** Batches stored by this instance (a claim that saw fewer rows than it asked for clears `backlog` only if none came meanwhile). */
  private storedBatches = 0;
  /** Rows may be waiting: stored here since the last claim that found the inbox empty. */
  private backlog = false;
  /** The worker holds claimed rows. */
  private processing = false;
  /** Under load, the worker's next delivery may not start before this (performance.now()). */
  private shareAt = 0;
  private lastPruneAt = -Infinity;

  private running = false;
  private loop?: Promise<void>;
  /** A signal that came while the worker was awake (claiming, processing) skips its next sleep. */
  private readonly wakeUp = new WakeUp();
  private unlisten?: () => Promise<void>;

  constructor(options: ProviderInboxOptions) {
    this.platform = options.platform;
    this.log = options.log;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.pollMs = options.pollMs ?? DEFAULT_IDLE_MS;
    // On PostgreSQL a batch's cost is mostly its statements, so larger batches pay one commit for
    // many; on the embedded store a batch holds the one connection (and the thread) from its first
    // statement to its commit, so it stays short enough for the deliveries arriving meanwhile.
    this.claimSize = options.claimSize ?? (this.platform.store.kind === 'postgres' ? 100 : 16);
    this.maxAttempts = options.maxAttempts ?? 8;
    this.retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
    this.minShare = options.minShare ?? 0.15;
    this.quietMs = options.quietMs ?? 25;
    this.inlineMax = options.inlineMax ?? 2;
    this.maxBatchRows = options.maxBatchRows ?? 500;
    this.maxFlushes = this.platform.store.kind === 'postgres' ? 4 : 1;
    this.workerId = `${this.platform.instanceId}/${randomUUID().slice(0, 8)}`;
  }

  /**
   * Takes one signed, validated delivery: resolves once it is processed or durably stored (the
   * caller answers 200 then), rejects if neither happened (the caller answers an error and the
   * provider retries).
   */
  async receive(payload: Payload, log: FastifyBaseLogger): Promise<void> {
    this.ingesting++;
    this.lastIngestAt = performance.now();
    try {
      // On the embedded store a delivery processed inline holds the thread from its first query to
      // its commit, so deliveries waiting in their sockets are not seen as arriving: yield to the
      // I/O callbacks of this turn first, and whatever arrived with this delivery counts.
      await new Promise((resolve) => setImmediate(resolve));
      if (this.ingesting <= this.inlineMax && !this.busy()) {
        this.stats.inline++;
        return await this.processInline(payload, log);
      }
      await this.enqueue(JSON.stringify(payload), laneOf(payload));
      this.stats.stored++;
    } finally {
      this.ingesting--;
      this.lastIngestAt = performance.now();
      this.signal();
    }
  }

  /** No delivery arrived for quietMs and none is being stored. */
  private quiet(): boolean {
    return this.ingesting === 0 && !this.queue.length && !this.flushing && performance.now() >= this.lastIngestAt + this.quietMs;
  }

  /** Nothing of this instance's is waiting: a delivery processed now overtakes none. */
  private busy(): boolean {
    return this.backlog || this.processing || this.flushing > 0 || this.queue.length > 0;
  }

  private async processInline(payload: Payload, log: FastifyBaseLogger): Promise<void> {
    try {
      await processProviderPayload(this.platform, payload, log);
    } catch (error) {
      // Kept for the worker to try again; if even that cannot be stored (the database is away),
      // the delivery was not taken: the caller answers the error and the provider retries.
      const now = this.platform.now();
      try {
        await this.platform.store.db
          .insertInto('provider_deliveries')
          .values({
            id: newId('pdl'),
            payload: JSON.stringify(payload),
            received_at: now,
            lane: laneOf(payload),
            // The database out of reach is not the delivery's fault (see fail).
            attempts: causedByUnavailable(error) ? 0 : 1,
            last_error: describe(error),
            lease_until: new Date(now.getTime() + this.retryDelayMs(1)),
            trace_context: currentTraceparent(),
          })
          .execute();
      } catch {
        throw error;
      }
      log.warn({ error: describe(error) }, 'provider webhook: processing failed; the delivery is stored and will be tried again');
    }
  }

  private enqueue(payload: string, lane: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ payload, lane, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      // After the I/O callbacks of this turn: every delivery whose bytes are in joins the batch.
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    });
  }

  /**
   * Starts INSERTs for what is queued, up to maxFlushes at once: one on the embedded store (a
   * second would only wait for the first), a few on PostgreSQL, where a commit mostly waits for
   * the disk and the next batch can be on its way meanwhile.
   */
  private flush(): void {
    while (this.queue.length && this.flushing < this.maxFlushes) {
      const group = this.queue.splice(0, this.maxBatchRows);
      this.flushing++;
      void this.insert(group)
        .then(
          () => {
            this.storedBatches++;
            this.backlog = true;
            for (const g of group) g.done();
          },
          (error: unknown) => {
            for (const g of group) g.done(error);
          },
        )
        .finally(() => {
          this.flushing--;
          this.flush();
          this.signal();
        });
    }
  }

  /** One multi-row INSERT; on PostgreSQL it also wakes the other instances' workers at commit. */
  private async insert(payloads: { payload: string; lane: number }[]): Promise<void> {
    const { db, kind } = this.platform.store;
    const at = this.platform.now();
    // The request that made this batch: deliveries stored together are linked to the first one's trace.
    const trace = currentTraceparent();
    const rows = payloads.map(({ payload, lane }) => ({ id: newId('pdl'), payload, lane, received_at: at, trace_context: trace }));
    if (kind !== 'postgres') {
      await db.insertInto('provider_deliveries').values(rows).execute();
      return;
    }
    const values = sql.join(rows.map((r) => sql`(${r.id}, ${r.payload}, ${r.lane}::smallint, ${at}, ${trace})`));
    await sql`with stored as (insert into provider_deliveries (id, payload, lane, received_at, trace_context) values ${values}) select pg_notify(${CHANNEL}, '')`.execute(
      db,
    );
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const unlisten = await this.platform.store.listen(CHANNEL, () => this.signal());
    // Rows stored by other instances while this one's LISTEN connection was away: swept at once.
    const offReconnect = this.platform.store.onReconnect(() => this.signal());
    this.unlisten = async () => {
      offReconnect();
      await unlisten();
    };
    this.loop = this.run(); // its first claim is the sweep on start
  }

  /** Stops claiming; the delivery being processed finishes, rows claimed but not started are released. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.signal();
    this.checkSettled();
    await this.loop;
    await this.unlisten?.();
    // Deliveries being stored finish (their callers are waiting for the answer).
    while (this.flushing || this.queue.length) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Wakes the worker (a delivery stored or finished, a notification); kept if it is not asleep. */
  signal(): void {
    this.wakeUp.wake();
  }

  /**
   * Resolves once nothing of this instance's is waiting in the inbox (rows waiting for a retry
   * or kept as poison aside). The sandbox's hand-off waits for it, so that a sandbox status
   * handed over is a status applied, as it was before the inbox.
   */
  async settled(): Promise<void> {
    while (this.running && this.busy()) await new Promise<void>((resolve) => this.settling.push(resolve));
  }

  private readonly settling: (() => void)[] = [];
  private checkSettled(): void {
    if (this.busy() && this.running) return;
    for (const resolve of this.settling.splice(0)) resolve();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let rows: Row[] = [];
      const before = this.storedBatches;
      try {
        await this.pruneNowAndThen();
        this.wakeUp.forget(); // a delivery stored from here on is looked for again before sleeping
        rows = await this.claim();
      } catch (error) {
        this.log.warn({ error: describe(error) }, 'provider inbox: claim failed');
      }
      if (rows.length < this.claimSize && this.storedBatches === before) this.backlog = false;
      this.processing = rows.length > 0;
      // Each lane's rows together (messages first, in arrival order), so a LOGIN's batch is not
      // held up by the statuses claimed with it.
      const batches = [LANE_MESSAGES, LANE_STATUSES]
        .map((lane) => rows.filter((r) => (lane === LANE_MESSAGES ? r.lane !== LANE_STATUSES : r.lane === LANE_STATUSES)))
        .filter((batch) => batch.length);
      for (let i = 0; i < batches.length; i++) {
        if (this.running) await this.turn();
        if (!this.running) {
          await this.release(batches.slice(i).flat());
          break;
        }
        // While deliveries are arriving, one at a time, so that their INSERTs and answers are not
        // held behind a long batch (the thread's share is kept per delivery, as before batches);
        // once the ingest is quiet, the rest of the lane at once.
        const lane = batches[i]!;
        const batch = this.quiet() ? lane : lane.splice(0, 1);
        if (lane.length && batch !== lane) i--;
        // A trace of its own, linked to the inbound request that stored its first delivery (server/ops/tracing.ts).
        await inBackgroundSpan(
          'provider deliveries',
          batch[0]!.trace_context,
          { 'chatapp.attempt': batch[0]!.attempts, 'chatapp.deliveries': batch.length },
          () => this.processBatch(batch),
        );
      }
      this.processing = false;
      this.checkSettled();
      if (!rows.length && this.running) await this.wakeUp.sleep(await this.untilDue());
    }
  }

  /**
   * How long to sleep with nothing claimable: until the earliest lease ends (a retry's time, or a
   * claim of an instance that may have died), at most pollMs; a row claimable already (held
   * locked by another claim) is looked at again after a second.
   */
  private async untilDue(): Promise<number> {
    try {
      const row = await this.platform.store.db
        .selectFrom('provider_deliveries')
        // This worker's own orphans (see workerId) are due at once.
        .select(sql<Date | null>`min(case when leased_by = ${this.workerId} then received_at else coalesce(lease_until, received_at) end)`.as('due'))
        .where('failed_at', 'is', null)
        .executeTakeFirst();
      return msUntil(row?.due ? new Date(row.due) : null, this.platform.now(), this.pollMs, Math.min(this.pollMs, 1_000));
    } catch (error) {
      this.log.warn({ error: describe(error) }, 'provider inbox: claim failed');
      return Math.min(this.pollMs, 1_000);
    }
  }

  private async claim(): Promise<Row[]> {
    const now = this.platform.now();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const rows = await this.platform.store.db
      .updateTable('provider_deliveries')
      .set((eb) => ({ lease_until: leaseUntil, leased_by: this.workerId, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('provider_deliveries')
          .select('id')
          .where('failed_at', 'is', null)
          .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<=', now), w('leased_by', '=', this.workerId)]))
          .orderBy('lane')
          .orderBy('seq')
          .limit(this.claimSize)
          .forUpdate()
          .skipLocked(),
      )
      .returning(['id', 'seq', 'lane', 'payload', 'attempts', 'trace_context'])
      .execute();
    return rows.sort((a, b) => a.lane - b.lane || Number(a.seq) - Number(b.seq));
  }

  /**
   * Waits for the worker's turn on the thread: at once when nothing arrived for quietMs,
   * otherwise when its minimum share is due (after a delivery that took d ms, d·(1−s)/s later).
   */
  private async turn(): Promise<void> {
    for (;;) {
      // Deliveries that arrived while the last one was processed enter `receive` first, so they count.
      await new Promise((resolve) => setImmediate(resolve));
      const now = performance.now();
      const quietAt = this.ingesting === 0 && !this.queue.length && !this.flushing ? this.lastIngestAt + this.quietMs : Infinity;
      const at = Math.min(quietAt, this.shareAt);
      if (now >= at || !this.running) return;
      await this.wakeUp.sleep(Number.isFinite(at) ? Math.max(1, at - now) : this.pollMs);
    }
  }

  /**
   * Runs the deliveries of a batch in one transaction with their rows' deletion: one commit for
   * them all. If any of them fails, the batch rolls back and each runs on its own (process), so
   * a failure is recorded on its row only and the others' effects commit.
   */
  private async processBatch(rows: Row[]): Promise<void> {
    if (rows.length === 1) return this.process(rows[0]!);
    const t0 = performance.now();
    let done: Set<string> | undefined;
    try {
      const deliveries = rows.map((row) => ({ key: row.id, payload: JSON.parse(row.payload) as Payload }));
      done = await processProviderPayloads(this.platform, deliveries, this.log, async (trx) => {
        const deleted = await trx
          .deleteFrom('provider_deliveries')
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .returning('id')
          .execute();
        return new Set(deleted.map((d) => d.id));
      });
    } catch (error) {
      this.log.info({ error: describe(error), deliveries: rows.length }, 'provider inbox: a batch failed; its deliveries are tried one by one');
    }
    if (done) {
      this.stats.processed += done.size;
      this.stats.skipped += rows.length - done.size;
      const end = performance.now();
      this.shareAt = end + ((end - t0) * (1 - this.minShare)) / this.minShare;
      return;
    }
    for (const row of rows) {
      if (!this.running) return this.release(rows.slice(rows.indexOf(row)));
      await this.turn();
      await this.process(row);
    }
  }

  /** Runs the delivery with its row's deletion in one transaction; a failure is recorded on the row. */
  private async process(row: Row): Promise<void> {
    const t0 = performance.now();
    try {
      const payload = JSON.parse(row.payload) as Payload;
      let claimed = false;
      await processProviderPayload(this.platform, payload, this.log, async (trx) => {
        const deleted = await trx.deleteFrom('provider_deliveries').where('id', '=', row.id).executeTakeFirst();
        return (claimed = Number(deleted.numDeletedRows) === 1);
      });
      this.stats[claimed ? 'processed' : 'skipped']++;
    } catch (error) {
      this.stats.failed++;
      await this.fail(row, error).catch((e) =>
        this.log.warn({ error: describe(e), delivery: row.id }, 'provider inbox: could not record a failed attempt (the lease will expire)'),
      );
    } finally {
      const end = performance.now();
      this.shareAt = end + ((end - t0) * (1 - this.minShare)) / this.minShare;
    }
  }

  /**
   * Records a failed attempt. The database out of reach (a connection ended, a restart) is not the
   * delivery's fault: such an attempt is not counted and is tried again after the first retry's
   * delay, however often it happened, so that a sign-in caught in a database outage is verified
   * within a second of its end and never given up as poison. Any other failure counts and backs off.
   */
  private async fail(row: Row, error: unknown): Promise<void> {
    const now = this.platform.now();
    const transient = causedByUnavailable(error);
    const poison = !transient && row.attempts >= this.maxAttempts;
    const message = describe(error);
    await this.platform.store.db
      .updateTable('provider_deliveries')
      .set((eb) => ({
        leased_by: null,
        last_error: message,
        lease_until: poison ? null : new Date(now.getTime() + this.retryDelayMs(transient ? 1 : row.attempts)),
        failed_at: poison ? now : null,
        ...(transient ? { attempts: eb('attempts', '-', 1) } : {}),
      }))
      .where('id', '=', row.id)
      .where('leased_by', '=', this.workerId)
      .execute();
    if (transient)
      this.log.warn({ delivery: row.id, error: message }, 'provider inbox: the database was out of reach; the delivery will be tried again shortly');
    else if (poison)
      this.log.error(
        { delivery: row.id, attempts: row.attempts, error: message },
        'provider inbox: delivery failed for good; kept with its error, not retried',
      );
    else this.log.warn({ delivery: row.id, attempts: row.attempts, error: message }, 'provider inbox: delivery failed; it will be tried again');
  }

  /** Rows claimed but not started go back without counting the attempt. */
  private async release(rows: Row[]): Promise<void> {
    if (!rows.length) return;
    await this.platform.store.db
      .updateTable('provider_deliveries')
      .set((eb) => ({ lease_until: null, leased_by: null, attempts: eb('attempts', '-', 1) }))
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .where('leased_by', '=', this.workerId)
      .execute()
      // The other instances' workers may sleep until their idle re-check: these are due now.
      .then(async () => {
        if (this.platform.store.kind === 'postgres') await this.platform.store.notify(CHANNEL, '');
      })
      .catch((error) => this.log.warn({ error: describe(error) }, 'provider inbox: could not release claimed rows (their lease will expire)'));
  }

  private async pruneNowAndThen(): Promise<void> {
    const now = performance.now();
    if (now - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = now;
    const before = new Date(this.platform.now().getTime() - KEEP_FAILED_MS);
    await this.platform.store.db.deleteFrom('provider_deliveries').where('failed_at', '<', before).execute();
    const early = new Date(this.platform.now().getTime() - KEEP_EARLY_STATUS_MS);
    await this.platform.store.db.deleteFrom('provider_early_statuses').where('received_at', '<', early).execute();
  }
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 2000);
}

/**
 * Creates this app's inbox; its worker starts when the app is ready and stops before the store
 * closes. PROVIDER_INBOX_LEASE_MS, _POLL_MS and _RETRY_MS (the first retry's delay) shorten the
 * schedule for the fault tests.
 */
export async function setupProviderInbox(app: FastifyInstance): Promise<void> {
  const { providerInboxLeaseMs, providerInboxPollMs, providerInboxRetryMs: retryMs } = app.config.workers;
  const inbox = new ProviderInbox({
    platform: app.platform,
    log: app.log,
    leaseMs: providerInboxLeaseMs,
    pollMs: providerInboxPollMs ?? app.config.workers.idleMs,
    ...(retryMs ? { retryDelayMs: (attempt: number) => retryMs * 2 ** (attempt - 1) } : {}),
  });
  app.decorate('providerInbox', inbox);
  setupProviderSignature(app);
  app.addHook('onReady', async () => inbox.start());
  app.addHook('preClose', async () => inbox.stop());
}
