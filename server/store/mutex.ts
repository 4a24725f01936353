// A first-come-first-served lock: the single PGlite connection is held by one caller at a time,
// for one query or for a whole transaction.
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Resolves with a release function once the lock is held. */
  lock(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.tail.then(() => release);
    this.tail = this.tail.then(() => held);
    return acquired;
  }
}
