// The timer worker, one per instance: fires due waits (delays end, ask and form timeouts) and
// re-takes runs whose instance died (lease passed). Due rows are taken with FOR UPDATE SKIP
// LOCKED and moved to `running` in the same transaction, so each timer fires once across
// instances, and after a restart (the rows are in the database, not in memory). After a cycle it
// sleeps until its next due row (a wait's fire_at, a running row's lease_until, a sequence step),
// at most pollMs (AUTOMATION_POLL_MS, else WORKER_IDLE_MS); it is woken early by a wait this
// instance creates and by `automation_due` (./due.ts) from any instance. An idle worker runs no
// query but its idle re-check.
import { sql } from 'kysely';
import { DEFAULT_IDLE_MS, earliest, msUntil, WakeUp, yieldToRequests } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import { announceDue, TIMERS_CHANNEL } from './due.js';
import { drive, LEASE_MS, type RunnerHooks } from './runner.js';

export interface TimerWorkerOptions {
  platform: Platform;
  /** The longest it sleeps with nothing due (a lost notification is found then). */
  pollMs?: number;
  batch?: number;
  log?: (message: string, extra?: object) => void;
  /** Extra due work sharing the loop (sequence enrolments); answers the next due time or null. */
  extra?: () => Promise<Date | null>;
}

/** After a failed cycle (the store away), and for a due row another take holds locked. */
const FAILED_RETRY_MS = 1_000;
const LOCKED_RETRY_MS = 100;

export class TimerWorker {
  private running = false;
  private loop?: Promise<void>;
  // A wake-up during a cycle is kept: the cycle ends by reading the next due time, and a wait
  // created after that read (by a reply on this instance, or announced by another) would
  // otherwise wait for the idle re-check; the sleep after that cycle is skipped instead.
  private readonly wakeUp = new WakeUp();
  private nextWakeAt = Infinity;
  private readonly pollMs: number;
  private readonly batch: number;
  private unlisten?: () => Promise<void>;

  /** The runs this worker drives report their waits to it. */
  private readonly hooks: RunnerHooks;

  constructor(private readonly options: TimerWorkerOptions) {
    this.hooks = { waited: (at) => this.waited(at), log: options.log };
    this.pollMs = options.pollMs ?? DEFAULT_IDLE_MS;
    this.batch = options.batch ?? 20;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { store } = this.options.platform;
    // A due time from another instance (or none: re-read everything); its LISTEN coming back
    // after notifications were lost starts a cycle too.
    const off = await store.listen(TIMERS_CHANNEL, (payload) => (payload ? this.notify(new Date(Number(payload))) : this.wakeUp.wake()));
    const offReconnect = store.onReconnect(() => this.wakeUp.wake());
    this.unlisten = async () => {
      offReconnect();
      await off();
    };
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp.wake();
    await this.loop;
    await this.unlisten?.();
  }

  /** A wait was created: wake before the next due time if it is due sooner. */
  notify(fireAt: Date): void {
    if (Number.isNaN(fireAt.getTime()) || fireAt.getTime() < this.nextWakeAt) this.wakeUp.wake();
  }

  /**
   * A run of this instance waits: this worker knows at once; on PostgreSQL the others are told
   * too, since one of them fires it if this instance is gone by then. (One process on PGlite.)
   */
  waited(fireAt: Date): void {
    this.notify(fireAt);
    const { platform } = this.options;
    if (platform.store.kind === 'postgres') void announceDue(platform, fireAt).catch(() => {});
  }

  private async run() {
    while (this.running) {
      let wait = Math.min(this.pollMs, FAILED_RETRY_MS);
      this.wakeUp.forget(); // this cycle reads what the wake-ups so far announced
      try {
        const due = await this.cycle();
        // A row due already was left by a take that found it locked: looked at again shortly.
        wait = msUntil(due, this.options.platform.now(), this.pollMs, Math.min(this.pollMs, LOCKED_RETRY_MS));
      } catch (error) {
        this.options.log?.('automation timer cycle failed', { error: String(error) });
      }
      if (!this.running) break;
      this.nextWakeAt = Date.now() + wait;
      await this.wakeUp.sleep(wait);
      this.nextWakeAt = Infinity;
    }
  }

  /** Takes and runs due executions; answers when the next one is due (null: none). */
  async cycle(): Promise<Date | null> {
    const { platform } = this.options;
    for (;;) {
      const taken = await this.take();
      if (!taken.length) break;
      for (const id of taken) {
        if (!this.running) break;
        try {
          await drive(platform, id, this.hooks);
        } catch (error) {
          this.options.log?.('automation run failed', { executionId: id, error: String(error) });
        }
      }
      if (!this.running || taken.length < this.batch) break;
      await yieldToRequests();
    }
    const extraNext = this.running ? await this.options.extra?.() : null;
    // Waits fire at fire_at; a running row is re-taken when its lease ends (its instance died).
    const row = await platform.store.db
      .selectFrom('automation_executions')
      .select(sql<Date | null>`min(case when status = 'waiting' then fire_at else lease_until end)`.as('next'))
      .where('status', 'in', ['waiting', 'running'])
      .executeTakeFirst();
    return earliest(row?.next ? new Date(row.next) : null, extraNext);
  }

  /** Leases a batch: due waits (resumed with a timeout) and running rows whose lease passed. */
  private async take(): Promise<string[]> {
    const { platform } = this.options;
    const now = platform.now();
    const lease = new Date(now.getTime() + LEASE_MS);
    return platform.store.db.transaction().execute(async (trx) => {
      const due = await trx
        .selectFrom('automation_executions')
        .select('id')
        .where('status', '=', 'waiting')
        .where('fire_at', '<=', now)
        .orderBy('fire_at')
        .limit(this.batch)
        .forUpdate()
        .skipLocked()
        .execute();
      if (due.length) {
        await trx
          .updateTable('automation_executions')
          .set({ status: 'running', leased_by: platform.instanceId, lease_until: lease, resume: JSON.stringify({ kind: 'timeout' }) })
          .where(
            'id',
            'in',
            due.map((r) => r.id),
          )
          .execute();
      }
      const stale = await trx
        .selectFrom('automation_executions')
        .select('id')
        .where('status', '=', 'running')
        .where('lease_until', '<', now)
        .orderBy('lease_until')
        .limit(this.batch)
        .forUpdate()
        .skipLocked()
        .execute();
      if (stale.length) {
        // The node it was at runs again with the input it had (at-least-once).
        await trx
          .updateTable('automation_executions')
          .set({ leased_by: platform.instanceId, lease_until: lease })
          .where(
            'id',
            'in',
            stale.map((r) => r.id),
          )
          .execute();
      }
      return [...due, ...stale].map((r) => r.id);
    });
  }
}
