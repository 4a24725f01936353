// server/lib/wake-up.ts: how the outbox, campaign, automation timer and provider inbox workers
// sleep between cycles. Fake timers: each case says exactly when a sleep ends.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { WakeUp } from '#server/lib/wake-up.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** Whether the sleep has ended, read after the microtasks queued so far have run. */
function watch(sleep: Promise<void>) {
  let ended = false;
  void sleep.then(() => (ended = true));
  return {
    ended: async () => {
      for (let i = 0; i < 3; i++) await Promise.resolve();
      return ended;
    },
  };
}

it('sleeps for ms when nothing wakes it', async () => {
  const sleep = watch(new WakeUp().sleep(1_000));
  await vi.advanceTimersByTimeAsync(999);
  expect(await sleep.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await sleep.ended()).toBe(true);
});

it('a sleep of 0 ms still waits for the timer, not only for the microtasks', async () => {
  const sleep = watch(new WakeUp().sleep(0));
  expect(await sleep.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(0);
  expect(await sleep.ended()).toBe(true);
});

it('wake() ends the sleep at once and clears its timer', async () => {
  const alarm = new WakeUp();
  const sleep = watch(alarm.sleep(60_000));
  await vi.advanceTimersByTimeAsync(10);
  alarm.wake();
  expect(await sleep.ended()).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
});

it('a wake-up that ended a sleep is spent: the next sleep lasts its ms', async () => {
  const alarm = new WakeUp();
  const first = alarm.sleep(1_000);
  alarm.wake();
  await first;
  const second = watch(alarm.sleep(1_000));
  await vi.advanceTimersByTimeAsync(999);
  expect(await second.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await second.ended()).toBe(true);
});

it('remembers a wake-up that came while no one slept: the next sleep returns at once, once', async () => {
  const alarm = new WakeUp();
  alarm.wake();
  alarm.wake(); // several while awake count as one
  expect(await watch(alarm.sleep(1_000)).ended()).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
  const next = watch(alarm.sleep(1_000));
  await vi.advanceTimersByTimeAsync(999);
  expect(await next.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await next.ended()).toBe(true);
});

it('forget() drops a remembered wake-up', async () => {
  const alarm = new WakeUp();
  alarm.wake();
  alarm.forget();
  const sleep = watch(alarm.sleep(1_000));
  expect(await sleep.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(1_000);
  expect(await sleep.ended()).toBe(true);
});

it('with remember: false, a wake-up while no one sleeps is dropped, and one during a sleep ends it', async () => {
  const alarm = new WakeUp({ remember: false });
  alarm.wake();
  const sleep = watch(alarm.sleep(1_000));
  await vi.advanceTimersByTimeAsync(500);
  expect(await sleep.ended()).toBe(false);
  alarm.wake();
  expect(await sleep.ended()).toBe(true);
});

it('wake() ends every sleep under way, whatever its ms; later sleeps are not cut short', async () => {
  const alarm = new WakeUp({ remember: false });
  const short = watch(alarm.sleep(100));
  const long = watch(alarm.sleep(5_000));
  await vi.advanceTimersByTimeAsync(100);
  expect(await short.ended()).toBe(true);
  expect(await long.ended()).toBe(false);
  const other = watch(alarm.sleep(5_000));
  alarm.wake();
  expect([await long.ended(), await other.ended()]).toEqual([true, true]);
  expect(vi.getTimerCount()).toBe(0);
  const after = watch(alarm.sleep(1_000));
  expect(await after.ended()).toBe(false);
  await vi.advanceTimersByTimeAsync(1_000);
  expect(await after.ended()).toBe(true);
});
