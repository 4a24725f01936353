// The database's clock as the instances' shared time (bad-inputs F-12, server/store/db-clock.ts); the
// two-instance case with a real 3-minute skew is test/faults/clock-skew.test.ts. The skew cases
// need PostgreSQL (npm run test:pg): embedded PGlite reads the very clock the test moves.
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { databaseClock } from '#server/store/db-clock.js';
import { openTestStore } from '#test/support/store.js';

let store: Awaited<ReturnType<typeof openTestStore>>;
beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => store.close());
afterEach(() => vi.restoreAllMocks());

it("on the database's own host: no offset, now() is the system clock", async () => {
  const clock = await databaseClock(store.db);
  clock.stop();
  expect(clock.offsetMs()).toBe(0);
  const before = Date.now();
  const now = clock.now().getTime();
  expect(now).toBeGreaterThanOrEqual(before);
  expect(now).toBeLessThanOrEqual(Date.now());
});

it.skipIf(!process.env.DATABASE_URL)('a system clock 3 minutes fast: now() follows the database, within the round trip', async () => {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + 180_000);
  const clock = await databaseClock(store.db);
  clock.stop();
  expect(Math.abs(clock.offsetMs() + 180_000)).toBeLessThan(1_000);
  expect(Math.abs(clock.now().getTime() - real())).toBeLessThan(1_000);
});

it.skipIf(!process.env.DATABASE_URL)('a skew under a second is noise: ignored', async () => {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + 400);
  const clock = await databaseClock(store.db);
  clock.stop();
  expect(clock.offsetMs()).toBe(0);
});
