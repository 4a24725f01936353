// How the background workers (outbox, campaigns, automation timers, provider inbox) wait: until a
// timeout, or until something they should look at happens (a notification, a finished attempt, a
// stop). A worker's loop reads the tables and then sleeps; a wake-up that arrives while it reads
// may concern a change the read missed, so by default it is remembered and the next sleep returns
// at once. The timer is not unref'd: a sleeping worker is a running one, and its stop ends the sleep.

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
      const timer = setTimeout(done, ms);
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
