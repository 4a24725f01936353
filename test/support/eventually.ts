// The two ways a test waits, and the only places it may: `eventually` for something to happen,
// `elapse` for real time that must pass. test/unit/test-waits.test.ts keeps bare sleeps out of
// every other test file.
import type { FastifyInstance } from 'fastify';

export interface EventuallyOptions {
  /** Fails after this long (ms). */
  within?: number;
  /** What is awaited, for the failure message. */
  what?: string;
  /**
   * An app whose platform events wake the check: it runs again at each event the bus delivers
   * (a session verified, a campaign's state, a message's status), and otherwise every `every` ms
   * for state that publishes no event (a row a worker wrote, a fake receiver's log).
   */
  app?: FastifyInstance;
  every?: number;
}

export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/** Resolves with the first truthy value of `check`, which runs at once and then on each wake. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { within = 10_000, what = 'the condition', app, every = 20 }: EventuallyOptions = {},
): Promise<Truthy<T>> {
  const end = Date.now() + within;
  let wake: (() => void) | undefined;
  const unsubscribe = app?.platform.bus.subscribe('*', () => wake?.());
  try {
    for (;;) {
      const value = await check();
      if (value) return value as Truthy<T>;
      if (Date.now() > end) throw new Error(`timed out after ${within} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, every);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    }
  } finally {
    unsubscribe?.();
  }
}

/**
 * Lets `ms` of real time pass. Only for what has no event to wait on, and `why` says what: that
 * something does not happen (no second delivery), a real process or socket, a rate measured in
 * real time.
 */
export function elapse(ms: number, why: string): Promise<void> {
  if (!why.trim()) throw new Error('elapse() needs a reason');
  return new Promise((resolve) => setTimeout(resolve, ms));
}
