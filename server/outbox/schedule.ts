// When to try a delivery again: Svix's schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h, 10 h), each delay with ±10 % jitter so that retries of one outage do not arrive at once.
// Each delay counts from the end of the failed attempt (server/outbox/outbox.ts), not its start.
const DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** Total attempts, the first included. */
export const MAX_ATTEMPTS = DELAYS_MS.length + 1;

/** Delay before attempt `attempt + 1`, after `attempt` failed attempts; null when none is left. */
export function retryDelayMs(attempt: number, random: () => number = Math.random): number | null {
  const base = DELAYS_MS[attempt - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + 0.2 * random()));
}
