// The timer worker, one per instance: fires due waits (delays end, ask and form timeouts) and
// re-takes runs whose instance died (lease passed). Due rows are taken with FOR UPDATE SKIP
// LOCKED and moved to `running` in the same transaction, so each timer fires once across
// instances, and after a restart (the rows are in the database, not in memory). It sleeps until
// the next due row or the poll interval, and is woken early when this instance creates a short wait.
import { sql } from 'kysely';
import { WakeUp } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import { drive, LEASE_MS, type RunnerHooks } from './runner.js';

export interface TimerWorkerOptions {
  platform: Platform;
  pollMs?: number;
  batch?: number;
  log?: (message: string, extra?: object) => void;
  /** Extra due work sharing the loop (sequence enrolments); answers the next due time or null. */
  extra?: () => Promise<Date | null>;
}

export class TimerWorker {
  private running = false;
  private loop?: Promise<void>;
  // A wake-up during a cycle is dropped: the cycle ends by reading the next due time (the waits
  // its own runs created are in it), and a wait created after that read is found by the next
  // poll at the latest.
  private readonly wakeUp = new WakeUp({ remember: false });
  private nextWakeAt = Infinity;
  private readonly pollMs: number;
  private readonly batch: number;

  /** The runs this worker drives report their waits to it. */
  private readonly hooks: RunnerHooks;

  constructor(private readonly options: TimerWorkerOptions) {
    this.hooks = { waited: (at) => this.notify(at), log: options.log };
    this.pollMs = options.pollMs ?? 1_000;
    this.batch = options.batch ?? 20;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp.wake();
    await this.loop;
  }

  /** A wait was created: wake before the next poll if it is due sooner. */
  notify(fireAt: Date): void {
    if (fireAt.getTime() < this.nextWakeAt) this.wakeUp.wake();
  }

  private async run() {
    while (this.running) {
      let next = Date.now() + this.pollMs;
      try {
        const due = await this.cycle();
        if (due) next = Math.min(next, due.getTime());
      } catch (error) {
        this.options.log?.('automation timer cycle failed', { error: String(error) });
      }
      if (!this.running) break;
      const wait = Math.max(0, next - Date.now());
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
    }
    const extraNext = this.running ? await this.options.extra?.() : null;
    const row = await platform.store.db
      .selectFrom('automation_executions')
      .select(sql<Date | null>`min(fire_at)`.as('next'))
      .where('status', '=', 'waiting')
      .executeTakeFirst();
    const next = row?.next ? new Date(row.next) : null;
    // biome-ignore lint/complexity/useMathMinMax: Dates, and the earlier Date itself is wanted
    if (next && extraNext) return next < extraNext ? next : extraNext;
    return next ?? extraNext ?? null;
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
