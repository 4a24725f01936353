// One instance's recent sends under one key (a sender number or a campaign), for the rule "never
// more than the rate in any second at the provider". A call reaches the provider at some moment
// between its start and its answer, and a busy event loop can hold a started request back and let
// it out together with later ones. So a send counts against the window from its start until one
// window after its answer, and while it is in flight: for any second at the provider holding k of
// these sends, the one started last saw the other k − 1 counted when it was let through, so k never
// exceeds the rate. The price is the call's duration added to each slot; the mean duration is kept
// so that slots can be reserved that far apart (rate.ts) and sends do not fall behind them.

/** A little over a second, so that clock reads a millisecond apart cannot squeeze one more send in. */
export const WINDOW_MS = 1002;
/** The most a call's duration adds to the reserved spacing: a provider slower than this is waited for. */
const MAX_LATENCY_MS = 1_000;
/** Weight of the newest call in the mean duration. */
const LATENCY_WEIGHT = 0.05;

export class SendWindow {
  private inFlight = 0;
  /** When recent calls were answered (Date.now(), so ascending); the latest `keep` of them. */
  private readonly answered: number[] = [];
  /** The most `perSecond` seen: a rate raised mid-campaign still finds its answers. */
  private keep = 0;
  private waiters: (() => void)[] = [];
  /** Mean call duration, ms (exponentially weighted). */
  private latency = 0;

  /** Milliseconds until one more send may start under `perSecond`; Infinity until a call in flight is answered. */
  waitMs(perSecond: number, now = Date.now()): number {
    const free = perSecond - this.inFlight;
    if (free <= 0) return Infinity;
    if (this.answered.length < free) return 0;
    return this.answered[this.answered.length - free]! + WINDOW_MS - now;
  }

  /** Resolves when a call in flight is answered. */
  nextAnswer(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** A send starts; the returned function (idempotent) is called when it is answered or failed. */
  start(perSecond: number): () => void {
    this.inFlight++;
    this.keep = Math.max(this.keep, perSecond);
    const startedAt = Date.now();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const now = Date.now();
      this.inFlight--;
      this.answered.push(now);
      if (this.answered.length > this.keep) this.answered.splice(0, this.answered.length - this.keep);
      this.latency += (Math.min(MAX_LATENCY_MS, now - startedAt) - this.latency) * LATENCY_WEIGHT;
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    };
  }

  /** Nothing in flight or waiting, and nothing answered within the window: the window can be dropped. */
  idle(now = Date.now()): boolean {
    return this.inFlight === 0 && this.waiters.length === 0 && (this.answered.at(-1) ?? -Infinity) + WINDOW_MS <= now;
  }

  /** How far apart to reserve slots so that this window rarely holds a send back. */
  spacingMs(perSecond: number): number {
    return (WINDOW_MS + this.latency) / perSecond;
  }
}
