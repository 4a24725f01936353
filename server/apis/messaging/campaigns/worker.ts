// The campaign worker, one per server instance. Each cycle it starts due scheduled campaigns
// (once across instances: the row is locked with SKIP LOCKED and its status re-checked), then for
// every `sending` campaign leases a batch of due recipients with FOR UPDATE SKIP LOCKED in the
// transaction that reserves their send slots (rate.ts), marks them `sending` with a lease, and
// sends each at its slot. Results are written in small batches (flush). A worker killed holding
// leases loses them when `lease_until` passes; another worker re-takes those recipients and sends
// again (at-least-once: only calls in flight or not yet flushed at the crash can be duplicated;
// such resends are counted in `campaigns.resent`). No new batch is leased while a batch of
// results is unwritten, so what a crash can duplicate stays within about two batches.
// While a campaign is sending the worker cycles every pollMs; with none sending it sleeps until the
// earliest scheduled_at, or at most idleMs, and is woken by `campaigns_due` (a campaign scheduled,
// started or resumed on any instance) or a `campaign.state` event: an idle worker runs no query.
import { inBackgroundSpan } from '#server/ops/tracing.js';
import type { FastifyBaseLogger } from 'fastify';
import { sql, type Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { DEFAULT_IDLE_MS, msUntil, WakeUp, yieldToRequests } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import { ProviderError } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import { recordAccepted, sendOutbound } from '../outbound/record-and-send.js';
import { applyEarlyStatuses } from '../provider/webhook.js';
import { recipientFields, renderedOverflow, templateContent, templateMessage, type RecipientFields } from '../outbound/template-components.js';
import {
  completeIfDone,
  failCampaign,
  skipErased,
  prepareChunk,
  skipOptedOut,
  skipUnsent,
  startSending,
  STATE_EVENT,
  TooManyRecipients,
  WAKE_CHANNEL,
  type CampaignRow,
} from './lifecycle.js';
import { pauseNumber, reserveSlots } from './rate.js';
import { loadSendContext, type SendContext } from './send-context.js';
import { SendWindow } from './send-window.js';

export interface CampaignWorkerOptions {
  platform: Platform;
  log: FastifyBaseLogger;
  /** How long a lease outlives its last slot (CAMPAIGN_LEASE_MS); after it, another worker re-sends. */
  leaseMs?: number;
  /** How far ahead of a number's next free slot recipients are leased. */
  lookaheadMs?: number;
  /** How often it cycles while a campaign is sending (CAMPAIGN_POLL_MS). */
  pollMs?: number;
  /** The longest it sleeps with no campaign sending or scheduled (WORKER_IDLE_MS). */
  idleMs?: number;
  flushMs?: number;
  maxBatch?: number;
  /** A send this late for its slot is not made; the recipient gets a new slot. */
  maxDriftMs?: number;
}

type Leased = { id: string; campaign_id: string; contact_id: string; phone: string; attempts: number };
type ErrorInfo = { code: number | string; title: string; detail?: string | null };
type Outcome =
  | { kind: 'sent'; r: Leased; ctx: SendContext; messageId: string; providerMessageId: string; text: string | null; at: Date }
  | { kind: 'failed'; r: Leased; error: ErrorInfo }
  /** Back to `queued`; `undo` when no provider call was made. */
  | { kind: 'requeue'; r: Leased; at: Date | null; undo: boolean };

/** Provider codes that stop the whole campaign rather than one recipient. */
const CAMPAIGN_STOPPERS = new Set([190, 131031, 132001, 132015, 132016]);
const MAX_ATTEMPTS = 3;
/**
 * A send later than this after its slot takes a new slot instead. Within one instance the send
 * windows hold the rate exactly; across instances a second can also hold another instance's late
 * sends, so this bounds the excess to MAX_DRIFT_MS worth of slots (1.25 × the rate) under lag.
 */
export const MAX_DRIFT_MS = 250;
/** Chunks of recipients a cycle inserts for preparing campaigns (each PREPARE_CHUNK rows). */
const PREPARE_CHUNKS_PER_CYCLE = 4;
/** Queued recipients of a cancelled campaign skipped per statement. */
const SWEEP_CHUNK = 5_000;

export class CampaignWorker {
  private readonly platform: Platform;
  private readonly leaseMs: number;
  private readonly lookaheadMs: number;
  private readonly pollMs: number;
  private readonly idleMs: number;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  private running = false;
  private loop?: Promise<void>;
  /**
   * The loop's sleep. A wake-up since the current cycle started is kept (the cycle may have read
   * the tables before the change): the sleep after that cycle is skipped.
   */
  private readonly wakeUp = new WakeUp();
  private readonly inFlight = new Set<Promise<void>>();
  /** Sends waiting for their slot or their pace: stop ends those waits, not the ones begun after it. */
  private readonly sendWaits = new WakeUp({ remember: false });
  private buffer: Outcome[] = [];
  /** Outcomes recorded and not yet committed: a crash now would re-send their recipients. */
  private unwritten = 0;
  private flushTimer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  /**
   * Campaigns paused, cancelled or failed since their recipients were leased, with the number of
   * the state event that said so (`stateEvents`): a cycle that reads a campaign as `sending`
   * clears entries older than its read, so a lost `sending` event cannot hold a campaign here.
   */
  private readonly halted = new Map<string, { status: string; seq: number }>();
  private stateEvents = 0;
  private readonly failures = new Map<string, string>();
  /**
   * Campaigns whose last lease found fewer due recipients than it asked for: only their flushes
   * look for completion (a query over the recipients that each flush of a long campaign would
   * otherwise pay for nothing). A cycle that leases none checks completion itself.
   */
  private readonly draining = new Set<string>();
  private readonly numberPausedUntil = new Map<string, number>();
  /** Per number: no lease before this time (its slots are reserved until then). */
  private readonly numberBusyUntil = new Map<string, number>();
  private readonly cleanups: (() => unknown)[] = [];
  /** This instance's recent sends, per number and per campaign (see pace()). */
  private readonly windows = new Map<string, SendWindow>();
  private readonly maxDriftMs: number;

  constructor(private readonly options: CampaignWorkerOptions) {
    this.platform = options.platform;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.lookaheadMs = options.lookaheadMs ?? 500;
    this.pollMs = options.pollMs ?? 1_000;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.flushMs = options.flushMs ?? 25;
    this.maxBatch = options.maxBatch ?? 100;
    // Embedded PGlite is one process by construction: no other instance shares the number's
    // slots, so the send windows alone hold the rate and a late send need not give up its slot
    // (requeueing it costs store writes that make the next sends later still).
    this.maxDriftMs = options.maxDriftMs ?? (options.platform.store.kind === 'pglite' ? Infinity : MAX_DRIFT_MS);
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { bus, store } = this.platform;
    this.cleanups.push(await store.listen(WAKE_CHANNEL, () => this.nudge()));
    this.cleanups.push(
      // Every cycle re-reads campaigns and slots from the tables; notifications lost while the
      // LISTEN connection was away only delay, and its return starts a cycle at once.
      store.onReconnect(() => this.nudge()),
      bus.subscribe(STATE_EVENT, (e) => {
        const { campaignId, status } = e.data as { campaignId: string; status: string };
        this.stateEvents++;
        if (status === 'sending') this.halted.delete(campaignId);
        else this.halted.set(campaignId, { status, seq: this.stateEvents });
        if (status === 'sending') this.nudge();
      }),
      bus.subscribe('campaign.number_paused', (e) => {
        const { phoneNumberId, until } = e.data as { phoneNumberId: string; until: number };
        this.numberPausedUntil.set(phoneNumberId, Math.max(until, this.numberPausedUntil.get(phoneNumberId) ?? 0));
      }),
    );
    this.loop = this.run();
  }

  /** Stops leasing; sends not yet started are released to the queue; results are written. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wakeUp.wake();
    await this.loop;
    this.sendWaits.wake();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    await this.flush();
    for (const cleanup of this.cleanups.splice(0)) await cleanup();
  }

  /** Starts a cycle now: ends the sleep, or, during a cycle, makes the next one start at once. */
  private nudge() {
    this.wakeUp.wake();
  }

  /**
   * The time slots, leases, pauses and retries are reckoned in: the platform's clock (the
   * database's on PostgreSQL, bad-inputs F-12), as reserveSlots gives them out, never the system
   * clock. With the two apart (an instance whose clock is off, or a measurement that read a slow
   * round trip as skew) a slot compared with Date.now() is always "late": each send was put back
   * for a new slot and the campaign never ended.
   */
  private clock(): number {
    return this.platform.now().getTime();
  }

  private log(message: string, extra?: object) {
    this.options.log.warn(extra ?? {}, message);
  }

  private async run() {
    while (this.running) {
      this.wakeUp.forget(); // this cycle reads what the wake-ups so far announced
      let wakeAt = this.clock() + this.pollMs; // after a failed cycle
      try {
        wakeAt = await this.cycle();
      } catch (error) {
        this.log('campaign cycle failed', { error: String(error) });
      }
      const wait = wakeAt - this.clock();
      if (this.running && wait > 0) await this.wakeUp.sleep(wait);
    }
  }

  /** One pass; answers when the next pass is worth making. */
  async cycle(): Promise<number> {
    await this.startScheduled();
    const preparing = await this.prepare();
    const sweeping = await this.sweepCancelled();
    const more = preparing || sweeping;
    const seen = this.stateEvents;
    const campaigns = await this.platform.store.db
      .selectFrom('campaigns')
      .selectAll()
      .where('status', '=', 'sending')
      .orderBy('started_at')
      .limit(100)
      .execute();
    for (const c of campaigns) {
      // Sending in the table: a halt we heard of before this read was undone (its event lost).
      // A failure this instance found itself stays until its flush writes it.
      const halt = this.halted.get(c.id);
      if (halt && halt.seq <= seen && !this.failures.has(c.id)) this.halted.delete(c.id);
    }
    for (const [key, w] of this.windows) if (w.idle()) this.windows.delete(key);
    if (!campaigns.length) return more ? this.clock() : this.clock() + (await this.untilScheduled());
    let next = more ? this.clock() : this.clock() + this.pollMs;
    for (const c of campaigns) {
      if (!this.running) break;
      const busy = Math.max(this.numberBusyUntil.get(c.phone_number_id) ?? 0, (this.numberPausedUntil.get(c.phone_number_id) ?? 0) - this.lookaheadMs);
      if (busy > this.clock()) {
        next = Math.min(next, busy);
        continue;
      }
      // Back-pressure: no new lease while a batch of results waits to be written. Without it a
      // slow store lets sends run seconds ahead of their writes, and a crash re-sends all of them.
      if (this.unwritten >= this.maxBatch) await this.flush();
      // And none while a batch of sends is still in flight: when a lease takes longer than the
      // slots it reserves (a slow store), leasing would otherwise run ahead of sending without end.
      while (this.running && this.inFlight.size >= this.maxBatch) await Promise.race(this.inFlight);
      if (!this.running) break;
      // Each batch is a trace of its own: its SQL and the provider calls of its sends.
      const leased = await inBackgroundSpan('campaign batch', null, { 'chatapp.campaign_id': c.id }, () => this.leaseBatch(c));
      if (leased !== null) next = Math.min(next, leased);
      await yieldToRequests();
    }
    return next;
  }

  /**
   * Inserts chunks of `preparing` campaigns' recipients (lifecycle.ts prepareChunk), each in its
   * own short transaction, yielding to requests between them; at most PREPARE_CHUNKS_PER_CYCLE
   * chunks a cycle, so sending campaigns keep their pace. Answers whether any is left to prepare.
   */
  private async prepare(): Promise<boolean> {
    const db = this.platform.store.db;
    const preparing = await db.selectFrom('campaigns').select('id').where('status', '=', 'preparing').orderBy('created_at').limit(10).execute();
    let chunks = 0;
    for (const { id } of preparing) {
      for (;;) {
        if (!this.running || chunks >= PREPARE_CHUNKS_PER_CYCLE) return true;
        const now = this.platform.now();
        const c = await db.transaction().execute((trx) => prepareChunk(trx, id, now, this.platform.config.campaignMaxRecipients));
        chunks++;
        await yieldToRequests();
        if (c?.status !== 'preparing') break;
      }
    }
    return false;
  }

  /**
   * Skips, in chunks, the queued recipients of campaigns cancelled in the last day that the
   * cancel left (it skips a small campaign's itself). Answers whether any is left.
   */
  private async sweepCancelled(): Promise<boolean> {
    const db = this.platform.store.db;
    const since = new Date(this.platform.now().getTime() - 86_400_000);
    const cancelled = await db
      .selectFrom('campaigns as c')
      .select('c.id')
      .where('c.status', '=', 'cancelled')
      .where('c.finished_at', '>=', since)
      .where(({ exists, selectFrom }) =>
        exists(selectFrom('campaign_recipients as r').select('r.id').whereRef('r.campaign_id', '=', 'c.id').where('r.state', '=', 'queued')),
      )
      .limit(10)
      .execute();
    for (const { id } of cancelled) {
      if (!this.running) return true;
      await skipUnsent(db, id, 'Campaign cancelled.', SWEEP_CHUNK);
      await yieldToRequests();
    }
    return cancelled.length > 0;
  }

  /** With no campaign sending: how long until the earliest scheduled one is due (at most idleMs). */
  private async untilScheduled(): Promise<number> {
    const row = await this.platform.store.db
      .selectFrom('campaigns')
      .select((eb) => eb.fn.min('scheduled_at').as('due'))
      .where('status', '=', 'scheduled')
      .executeTakeFirst();
    return msUntil(row?.due ? new Date(row.due) : null, this.platform.now(), this.idleMs, this.pollMs);
  }

  private async startScheduled() {
    const db = this.platform.store.db;
    for (let i = 0; i < 20 && this.running; i++) {
      const now = this.platform.now();
      const started = await db.transaction().execute(async (trx) => {
        const c = await trx
          .selectFrom('campaigns')
          .selectAll()
          .where('status', '=', 'scheduled')
          .where('scheduled_at', '<=', now)
          .orderBy('scheduled_at')
          .limit(1)
          .forUpdate()
          .skipLocked()
          .executeTakeFirst();
        if (!c) return false;
        try {
          await startSending(trx, c, now, this.platform.config.campaignMaxRecipients, this.platform.config.campaignPrepareInRequest);
        } catch (error) {
          if (!(error instanceof TooManyRecipients)) throw error;
          await failCampaign(trx, c.id, error.message, now);
        }
        return true;
      });
      if (!started) return;
      await yieldToRequests();
    }
  }

  /** Leases and dispatches one batch of `c`; answers when this number may lease again, or null. */
  private async leaseBatch(c: CampaignRow): Promise<number | null> {
    const db = this.platform.store.db;
    const ctx = await loadSendContext(this.platform, c);
    if ('failure' in ctx) {
      await db.transaction().execute((trx) => failCampaign(trx, c.id, ctx.failure, this.platform.now()));
      return null;
    }
    const n = Math.max(1, Math.min(this.maxBatch, Math.ceil((ctx.rate * this.lookaheadMs) / 1000)));
    const now = this.platform.now();
    const batch = await db.transaction().execute(async (trx) => {
      const claimed = await trx
        .selectFrom('campaign_recipients')
        .select(['id', 'campaign_id', 'contact_id', 'phone', 'attempts', 'state'])
        .where('campaign_id', '=', c.id)
        .where((eb) =>
          eb.or([
            eb.and([eb('state', '=', 'queued'), eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)])]),
            // Never our own: a result this instance still holds is written whatever the lease says.
            eb.and([eb('state', '=', 'sending'), eb('lease_until', '<', now), eb('leased_by', '!=', this.platform.instanceId)]),
          ]),
        )
        .orderBy('id')
        .limit(n)
        .forUpdate()
        .skipLocked()
        .execute();
      if (claimed.length < n) this.draining.add(c.id);
      if (!claimed.length) {
        await completeIfDone(trx, c.id, now);
        return null;
      }
      // A recipient erased meanwhile (contact and number gone) is skipped, never sent to.
      const erased = claimed.filter((r) => r.contact_id === null || r.phone === null).map((r) => r.id);
      if (erased.length) await skipErased(trx, erased, now);
      const present = claimed.filter((r): r is typeof r & { contact_id: string; phone: string } => r.contact_id !== null && r.phone !== null);
      const contacts = present.length
        ? await trx
            .selectFrom('contacts')
            .select(['id', 'name', 'phone', 'email', 'custom_fields', 'opted_out_at'])
            .where(
              'id',
              'in',
              present.map((r) => r.contact_id),
            )
            .execute()
        : [];
      // Contacts that opted out since sending started are skipped, never sent to.
      const optedOut = new Set(contacts.filter((k) => k.opted_out_at).map((k) => k.id));
      const rows = optedOut.size ? present.filter((r) => !optedOut.has(r.contact_id)) : present;
      if (optedOut.size)
        await skipOptedOut(
          trx,
          c.id,
          present.filter((r) => optedOut.has(r.contact_id)).map((r) => r.id),
          now,
        );
      if (!rows.length) return 'skipped' as const;
      const slots = await reserveSlots(trx, c.phone_number_id, this.window(c.phone_number_id).spacingMs(ctx.rate), rows.length, now);
      const leaseUntil = new Date(slots.nextFree.getTime() + this.leaseMs);
      const ids = rows.map((r) => r.id);
      await trx
        .updateTable('campaign_recipients')
        .set((eb) => ({ state: 'sending', leased_by: this.platform.instanceId, lease_until: leaseUntil, attempts: eb('attempts', '+', 1), updated_at: now }))
        .where('id', 'in', ids)
        .execute();
      const resent = rows.filter((r) => r.state === 'sending').length;
      if (resent)
        await trx
          .updateTable('campaigns')
          .set((eb) => ({ resent: eb('resent', '+', resent) }))
          .where('id', '=', c.id)
          .execute();
      return { rows, slots, contacts: new Map(contacts.map((k) => [k.id, k])) };
    });
    if (!batch) return null;
    // A batch of opted-out recipients only: the next batch may be leased at once.
    if (batch === 'skipped') return this.clock();
    const busyUntil = batch.slots.nextFree.getTime() - this.lookaheadMs;
    this.numberBusyUntil.set(c.phone_number_id, busyUntil);
    batch.rows.forEach((row, i) => {
      const r: Leased = { ...row, attempts: row.attempts + 1 };
      const contact = batch.contacts.get(r.contact_id);
      const p = this.dispatch(ctx, r, batch.slots.at[i]!, recipientFields(contact, r.phone)).catch((error) =>
        this.log('campaign send failed', { error: String(error) }),
      );
      this.inFlight.add(p);
      void p.finally(() => this.inFlight.delete(p));
    });
    return busyUntil;
  }

  private sleepUntil(at: Date): Promise<void> {
    const ms = at.getTime() - this.clock();
    if (ms <= 0) return Promise.resolve();
    return this.sendWaits.sleep(ms);
  }

  private window(key: string): SendWindow {
    return this.windows.get(key) ?? this.windows.set(key, new SendWindow()).get(key)!;
  }

  /**
   * Holds a send while `perSecond` sends under `key` may have reached the provider within the last
   * second (send-window.ts). Slots are never early, but a busy event loop fires late ones together
   * and holds written requests back: this lets the worker catch up without ever putting more than
   * the rate into one second at the provider.
   */
  private async pace(key: string, perSecond: number) {
    const w = this.window(key);
    for (;;) {
      const wait = w.waitMs(perSecond);
      if (wait <= 0) break;
      await (wait === Infinity ? w.nextAnswer() : this.sleepUntil(new Date(this.clock() + wait)));
    }
  }

  private mayPass(key: string, perSecond: number): boolean {
    return this.window(key).waitMs(perSecond) <= 0;
  }

  private async dispatch(ctx: SendContext, r: Leased, at: Date, contact: RecipientFields) {
    await this.sleepUntil(at);
    const pn = ctx.campaign.phone_number_id;
    const numberRate = ctx.sender.number.messages_per_second;
    // Both checks again after any wait: another dispatch may have sent meanwhile.
    do {
      await this.pace(pn, numberRate);
      await this.pace(r.campaign_id, ctx.rate);
    } while (!this.mayPass(pn, numberRate) || !this.mayPass(r.campaign_id, ctx.rate));
    const pausedUntil = this.numberPausedUntil.get(pn) ?? 0;
    // Too late for its slot: sending now could crowd another instance's slots, so it takes a new one.
    const late = this.clock() - at.getTime() > this.maxDriftMs;
    if (!this.running || late || this.halted.has(r.campaign_id) || pausedUntil > this.clock()) {
      return this.record({ kind: 'requeue', r, at: pausedUntil > this.clock() ? new Date(pausedUntil) : null, undo: true });
    }
    const answeredNumber = this.window(pn).start(numberRate);
    const answeredCampaign = this.window(r.campaign_id).start(ctx.rate);
    const answered = () => (answeredNumber(), answeredCampaign());
    try {
      const built = templateMessage(ctx.stored, ctx.template, contact, ctx.mediaIds);
      const { message, text } = built;
      // This recipient's values make the message longer than the provider takes: not sent.
      const overflow = renderedOverflow(ctx.stored, built);
      if (overflow) {
        answered();
        return this.record({ kind: 'failed', r, error: { code: 'too_long', title: overflow.detail, detail: `template${overflow.pointer}` } });
      }
      const res = await sendOutbound(
        ctx.sender,
        r.phone,
        { type: 'template', template: message },
        { ...ctx.options, bizOpaqueCallbackData: `campaign:${r.campaign_id}:${r.id}` },
      );
      answered();
      this.record({ kind: 'sent', r, ctx, messageId: newId('msg'), providerMessageId: res.providerMessageId, text, at: this.platform.now() });
    } catch (error) {
      answered();
      await this.onSendError(ctx, r, error);
    }
  }

  private async onSendError(ctx: SendContext, r: Leased, error: unknown) {
    if (!(error instanceof ProviderError)) {
      this.log('campaign message could not be sent', { error: String(error) });
      return this.record({ kind: 'failed', r, error: { code: 'internal', title: 'The message could not be sent.' } });
    }
    const pn = ctx.campaign.phone_number_id;
    if (error.rateLimited) {
      // bad-inputs F-8: this number waits as told, on every instance; the recipient goes back to the queue.
      const until = this.clock() + Math.max(1, error.retryAfterSec ?? 1) * 1000;
      this.numberPausedUntil.set(pn, Math.max(until, this.numberPausedUntil.get(pn) ?? 0));
      await pauseNumber(this.platform.store.db, pn, new Date(until));
      await this.platform.bus.publish({ type: 'campaign.number_paused', workspaceId: ctx.campaign.workspace_id, data: { phoneNumberId: pn, until } });
      return this.record({ kind: 'requeue', r, at: new Date(until), undo: true });
    }
    if (error.code !== null && (CAMPAIGN_STOPPERS.has(error.code) || (error.code === 100 && error.subcode === 33))) {
      this.failures.set(r.campaign_id, `The chat provider refused the campaign: ${error.details ?? error.message}`);
      this.halted.set(r.campaign_id, { status: 'failed', seq: Infinity });
      return this.record({ kind: 'requeue', r, at: null, undo: true });
    }
    if (error.kind === 'timeout') {
      // The message may be on its way: never re-sent blindly (bad-inputs F-9).
      return this.record({
        kind: 'failed',
        r,
        error: { code: 'timeout', title: 'The chat provider did not answer in time; the outcome is unknown and the message was not re-sent.' },
      });
    }
    const retryable = error.notSent || error.kind === 'network' || (error.httpStatus ?? 0) >= 500;
    if (retryable && r.attempts < MAX_ATTEMPTS) {
      const backoff = 1000 * 2 ** (r.attempts - 1) * (0.5 + Math.random());
      return this.record({ kind: 'requeue', r, at: new Date(this.clock() + backoff), undo: false });
    }
    return this.record({ kind: 'failed', r, error: { code: error.code ?? error.httpStatus ?? 'provider', title: error.message, detail: error.details } });
  }

  private record(outcome: Outcome) {
    this.buffer.push(outcome);
    this.unwritten++;
    if (this.buffer.length >= 100) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Writes buffered results, one transaction; flushes never overlap. */
  flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.flushing = this.flushing.then(async () => {
      const batch = this.buffer.splice(0);
      if (!batch.length) return;
      try {
        await this.platform.store.db.transaction().execute((trx) => this.write(trx, batch));
        this.unwritten -= batch.length;
        // Counted once written (a failed write is retried with the same batch).
        this.platform.activity.count('campaign_sends', 'sent', batch.filter((o) => o.kind === 'sent').length);
        this.platform.activity.count('campaign_sends', 'failed', batch.filter((o) => o.kind === 'failed').length);
      } catch (error) {
        this.log('campaign results not written; retrying', { error: String(error) });
        this.buffer.unshift(...batch);
        this.flushTimer ??= setTimeout(() => void this.flush(), 500);
      }
    });
    return this.flushing;
  }

  private async write(trx: Transaction<Database>, batch: Outcome[]) {
    const now = this.platform.now();
    const sent = batch.filter((o): o is Extract<Outcome, { kind: 'sent' }> => o.kind === 'sent');
    // The messages the provider accepted, recorded with their recipients' states.
    await recordAccepted(
      trx,
      sent.map((o) => ({
        id: o.messageId,
        workspaceId: o.ctx.campaign.workspace_id,
        phoneNumberId: o.ctx.campaign.phone_number_id,
        contactId: o.r.contact_id,
        type: 'template',
        // What the customer received: the body with this recipient's values in place.
        content: templateContent({ id: o.ctx.templateId, name: o.ctx.template.name, language: o.ctx.template.language }, o.text),
        providerMessageId: o.providerMessageId,
        templateId: o.ctx.templateId,
        campaignId: o.r.campaign_id,
        at: o.at,
      })),
    );
    const values = batch.map((o) => {
      const state = o.kind === 'sent' ? 'sent' : o.kind === 'failed' ? 'failed' : 'queued';
      const messageId = o.kind === 'sent' ? o.messageId : null;
      const providerId = o.kind === 'sent' ? o.providerMessageId : null;
      const error = o.kind === 'failed' ? JSON.stringify(o.error) : null;
      const next = o.kind === 'requeue' ? o.at : null;
      const undo = o.kind === 'requeue' && o.undo ? 1 : 0;
      return sql`(${o.r.id}::bigint, ${state}, ${messageId}::text, ${providerId}::text, ${error}::jsonb, ${next}::timestamptz, ${undo}::int)`;
    });
    // Only rows this instance still holds: if its lease ran out and another worker took the
    // recipient, that worker's result is the one recorded. `(state = 'sending') is true` keeps
    // the plan on the primary key, one probe per result: stated plainly, the state index looks
    // cheaper whenever the statistics count few rows `sending`, and that plan reads the values
    // list once per held row (a flush took 10–40 ms instead of 1–2 on the embedded store).
    await sql`update campaign_recipients r set state = v.state, message_id = coalesce(v.message_id, r.message_id),
        provider_message_id = coalesce(v.provider_id, r.provider_message_id), error = v.error, next_attempt_at = v.next_at,
        attempts = r.attempts - v.undo, lease_until = null, leased_by = null, updated_at = ${now}
      from (values ${sql.join(values)}) as v(id, state, message_id, provider_id, error, next_at, undo)
      where r.id = v.id and r.leased_by = ${this.platform.instanceId} and (r.state = 'sending') is true`.execute(trx);
    // A status the provider sent before this batch committed waited for it; it applies now, after
    // the recipients are `sent`, so it moves them on as it would have.
    await applyEarlyStatuses(
      trx,
      this.platform,
      this.options.log,
      sent.map((o) => ({ phoneNumberId: o.ctx.campaign.phone_number_id, wamid: o.providerMessageId })),
    );
    for (const id of new Set(batch.map((o) => o.r.campaign_id))) {
      const reason = this.failures.get(id);
      if (reason) {
        this.failures.delete(id);
        // Already failed (a second stopper error from the same batch): still skip what it requeued.
        if (!(await failCampaign(trx, id, reason, now))) await skipUnsent(trx, id, 'Campaign failed.');
        continue;
      }
      const c = await trx.selectFrom('campaigns').select('status').where('id', '=', id).executeTakeFirst();
      // A cancelled campaign's queued recipients are skipped a chunk at a time (the sweep does the
      // rest after this batch), not all in this batch's transaction.
      if (c?.status === 'cancelled') await skipUnsent(trx, id, 'Campaign cancelled.', SWEEP_CHUNK);
      else if (c?.status === 'failed') await skipUnsent(trx, id, 'Campaign failed.');
      else if (c?.status === 'sending' && this.draining.has(id) && (await completeIfDone(trx, id, now))) this.draining.delete(id);
      if (c?.status !== 'sending') this.draining.delete(id);
    }
  }
}
