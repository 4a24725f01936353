// Counts of what the background workers did (webhook attempts, campaign sends), kept as plain
// totals whatever the configuration: an integer increment costs nothing measurable, and the
// workers stay free of any metrics library. The Prometheus endpoint (./metrics.ts) reads them
// when scraped. Names and outcomes are fixed here: no label value comes from user data.
export const ACTIVITY = {
  /** Outbox webhook attempts by outcome: delivered, retried later, or given up (failed for good). */
  webhook_attempts: ['succeeded', 'retry', 'failed'],
  /** Campaign recipients handled by the campaign worker: accepted by the provider, or failed. */
  campaign_sends: ['sent', 'failed'],
} as const;

export type ActivityName = keyof typeof ACTIVITY;
export type ActivityOutcome<N extends ActivityName> = (typeof ACTIVITY)[N][number];

export class Activity {
  private readonly totals = new Map<string, number>();

  count<N extends ActivityName>(name: N, outcome: ActivityOutcome<N>, n = 1): void {
    if (n <= 0) return;
    const key = `${name}:${outcome}`;
    this.totals.set(key, (this.totals.get(key) ?? 0) + n);
  }

  total<N extends ActivityName>(name: N, outcome: ActivityOutcome<N>): number {
    return this.totals.get(`${name}:${outcome}`) ?? 0;
  }
}
