// How the background workers (outbox, campaigns, automation timers and dispatcher, provider inbox,
// the Login and Connect session sweeps) wait: until the next due time of their own rows, or until
// something they should look at happens (a notification, a finished attempt, a stop). A worker's
// loop reads the tables, learns when its earliest row is due (`msUntil`), and sleeps; with nothing
// due it sleeps `idleMs` (WORKER_IDLE_MS), a safety re-check for a lost notification, so an idle
// server runs (nearly) no queries. A wake-up that arrives while it reads may concern a change the
// read missed, so by default it is remembered and the next sleep returns at once. The timer is not
// unref'd: a sleeping worker is a running one, and its stop ends the sleep.

/** setTimeout fires at once for a longer delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The longest a worker sleeps when nothing is due, unless configured (WORKER_IDLE_MS). */
export const DEFAULT_IDLE_MS = 60_000;

/**
 * How long to sleep from `now` until `due` (null: nothing due): at most `idleMs`, at least
 * `minMs` (a row due already but not taken, as one another instance holds locked, is not
 * re-read in a tight loop).
 */
export function msUntil(due: Date | null | undefined, now: Date, idleMs: number, minMs = 0): number {
  if (!due) return idleMs;
  return Math.min(idleMs, Math.max(minMs, due.getTime() - now.getTime()));
}

/** The earlier of two due times (null: none). */
export function earliest(a: Date | null | undefined, b: Date | null | undefined): Date | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return a.getTime() <= b.getTime() ? a : b;
}

/** Lets what waits on the event loop (requests on the embedded store) run before the next batch. */
export function yieldToRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export interface WakeUpOptions {
  /**
   * Whether a wake() while no one sleeps makes the next sleep return at once (default true).
   * False for a worker whose loop re-reads everything each cycle anyway, or whose wake-ups only
   * end sleeps already under way.
   */
  remember?: boolean;
}

export class WakeUp {
  private readonly sleepers = new Set<() => void>();
  private pending = false;
  private readonly remember: boolean;

  constructor(options: WakeUpOptions = {}) {
    this.remember = options.remember ?? true;
  }

  /** Resolves after `ms`, or at the first wake(); at once if a remembered wake-up is pending. */
  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(ms, MAX_TIMER_MS));
      this.sleepers.add(done);
    });
  }

  /** Ends every sleep under way; with none, is remembered for the next one (unless told not to). */
  wake(): void {
    if (!this.sleepers.size) {
      if (this.remember) this.pending = true;
      return;
    }
    for (const done of [...this.sleepers]) done();
  }

  /**
   * Drops a remembered wake-up: the caller is about to read the state it announced, so sleeping
   * after that read is right.
   */
  forget(): void {
    this.pending = false;
  }
}
