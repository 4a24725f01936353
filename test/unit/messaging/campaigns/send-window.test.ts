// The send window counts a send from its start until a second after its answer, so whenever
// between the two the provider receives it, no second at the provider holds more than the rate.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SendWindow, WINDOW_MS } from '#server/apis/messaging/campaigns/send-window.js';
import { maxInWindow } from '#test/support/max-in-window.js';

beforeEach(() => vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 }));
afterEach(() => vi.useRealTimers());
const at = (ms: number) => vi.setSystemTime(1_000_000 + ms);

describe('SendWindow', () => {
  it('lets `rate` sends start at once, then waits for an answer while all are in flight', () => {
    const w = new SendWindow();
    const answers = [0, 1, 2].map(() => (expect(w.waitMs(3)).toBe(0), w.start(3)));
    expect(w.waitMs(3)).toBe(Infinity);
    at(40);
    answers[1]!();
    answers[1]!(); // idempotent
    expect(w.waitMs(3)).toBe(WINDOW_MS); // answered at 40: free again at 40 + 1002
    at(1_042);
    expect(w.waitMs(3)).toBe(0);
  });

  it('wakes a waiter when a call is answered', async () => {
    const w = new SendWindow();
    const answer = w.start(1);
    let woke = false;
    const waiting = w.nextAnswer().then(() => (woke = true));
    expect(woke).toBe(false);
    answer();
    await waiting;
    expect(woke).toBe(true);
  });

  it('keeps the answers of a rate raised mid-way', () => {
    const w = new SendWindow();
    for (let i = 0; i < 2; i++) w.start(2)();
    for (let i = 0; i < 2; i++) w.start(4)();
    expect(w.waitMs(4)).toBe(WINDOW_MS);
  });

  it('reserves slots the mean call time further apart, up to a second more', () => {
    const w = new SendWindow();
    expect(w.spacingMs(1000)).toBeCloseTo(1.002);
    for (let i = 0; i < 200; i++) {
      const answer = w.start(1000);
      at(i * 100 + 50);
      answer();
      at(i * 100 + 100);
    }
    expect(w.spacingMs(1000)).toBeCloseTo(1.052, 2);
    const slow = w.start(1000);
    at(1_000_000);
    slow();
    expect(w.spacingMs(1000)).toBeLessThan(2.002);
  });

  it('is idle once nothing is in flight and the last answer is a window old', () => {
    const w = new SendWindow();
    const answer = w.start(5);
    expect(w.idle()).toBe(false);
    at(10);
    answer();
    expect(w.idle()).toBe(false);
    at(10 + WINDOW_MS);
    expect(w.idle()).toBe(true);
  });

  // A simulated sender whose requests reach the provider anywhere between start and answer (the
  // event loop holding them back by up to 300 ms), started as soon as the window allows.
  it('never puts more than the rate into any second at the provider, wherever the arrivals fall', () => {
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (const rate of [1, 5, 20]) {
      const w = new SendWindow();
      const arrivals: number[] = [];
      const inFlight: { answerAt: number; answer: () => void }[] = [];
      for (let t = 0; t < 10_000; t++) {
        at(t);
        for (const f of inFlight.filter((f) => f.answerAt === t)) f.answer();
        while (w.waitMs(rate) <= 0) {
          const arriveAt = t + Math.floor(random() * 300);
          const answerAt = arriveAt + Math.floor(random() * 50);
          arrivals.push(arriveAt);
          inFlight.push({ answerAt: Math.max(answerAt, t + 1), answer: w.start(rate) });
        }
      }
      expect(maxInWindow(arrivals, 1000)).toBeLessThanOrEqual(rate);
      // …and still near the rate: each send holds its place for a window plus its own time.
      expect(arrivals.length).toBeGreaterThan(rate * 10 * 0.7);
    }
  });
});
