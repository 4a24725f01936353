// A sweep that runs when its rows are due rather than on an interval (the Login session expiry,
// the Connect reader sessions). Each pass does what is due and answers when its next row is due;
// the loop sleeps until then, at most `idleMs`, and is woken by `announce` (a write that made a
// row due sooner) on this instance and, on PostgreSQL, on the others through NOTIFY on `channel`.
// The rows stay the truth: a lost notification, or an instance that died before its rows came
// due, only waits for the next idle re-check.
import type { Store } from '#server/store/db.js';
import { msUntil, WakeUp } from './wake-up.js';

export interface DueLoopOptions {
  store: Store;
  /** NOTIFY channel of the announcements; the payload is the due time, epoch milliseconds. */
  channel: string;
  /** Does what is due; answers when the next row is due (null: none). */
  pass: () => Promise<Date | null>;
  now: () => Date;
  idleMs: number;
  /** Sleep after a failed pass, and at least between passes. */
  retryMs?: number;
  log: (error: unknown) => void;
}

export class DueLoop {
  private readonly wakeUp = new WakeUp();
  private running = false;
  private loop?: Promise<void>;
  private cleanup?: () => Promise<void>;
  /**
   * When the current sleep ends (epoch ms of `now()`); Infinity while a pass runs, whose read of
   * the next due time may have missed the row announced (the wake-up is kept for its sleep).
   */
  private nextAt = Infinity;

  constructor(private readonly options: DueLoopOptions) {}

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { store, channel } = this.options;
    const off = await store.listen(channel, (payload) => this.due(new Date(Number(payload))));
    const offReconnect = store.onReconnect(() => this.wakeUp.wake());
    this.cleanup = async () => {
      offReconnect();
      await off();
    };
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wakeUp.wake();
    await this.loop;
    await this.cleanup?.();
  }

  /** A row of this instance is due at `at`: wakes the loop if it would sleep past it. */
  due(at: Date): void {
    if (Number.isNaN(at.getTime()) || at.getTime() < this.nextAt) this.wakeUp.wake();
  }

  /** `due`, and on PostgreSQL the other instances' loops too (one of them runs it if this one is gone). */
  announce(at: Date): void {
    if (at.getTime() >= this.nextAt) return;
    this.due(at);
    const { store, channel } = this.options;
    if (store.kind === 'postgres') void store.notify(channel, String(at.getTime())).catch(() => {});
  }

  private async run(): Promise<void> {
    const retryMs = this.options.retryMs ?? 1_000;
    while (this.running) {
      this.nextAt = Infinity;
      this.wakeUp.forget(); // this pass reads what the announcements so far made due
      let wait = retryMs;
      try {
        const next = await this.options.pass();
        wait = msUntil(next, this.options.now(), this.options.idleMs, retryMs);
      } catch (error) {
        this.options.log(error);
      }
      if (!this.running) break;
      this.nextAt = this.options.now().getTime() + wait;
      await this.wakeUp.sleep(wait);
    }
  }
}
