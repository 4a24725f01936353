// A transaction PostgreSQL aborted to break a deadlock (40P01) or a serialization conflict (40001)
// runs again, at most three times in all; any other failure is thrown at once.
import { describe, expect, it } from 'vitest';
import { isRetryableConflict, retryConflicts } from '#server/store/retry-conflicts.js';

const failing = (codes: (string | undefined)[]) => {
  let calls = 0;
  const run = async () => {
    const code = codes[calls++];
    if (code === 'ok') return calls;
    throw Object.assign(new Error(`failed with ${code}`), { code });
  };
  return { run, calls: () => calls };
};

describe('retryConflicts', () => {
  it('runs a deadlocked transaction again until it commits', async () => {
    const t = failing(['40P01', '40001', 'ok']);
    await expect(retryConflicts(t.run)).resolves.toBe(3);
  });

  it('gives up after three attempts, with the last error', async () => {
    const t = failing(['40P01', '40P01', '40P01', 'ok']);
    await expect(retryConflicts(t.run)).rejects.toMatchObject({ code: '40P01' });
    expect(t.calls()).toBe(3);
  });

  it('never repeats any other failure', async () => {
    for (const code of ['23505', '57014', undefined]) {
      const t = failing([code, 'ok']);
      await expect(retryConflicts(t.run)).rejects.toThrow(`failed with ${code}`);
      expect(t.calls()).toBe(1);
    }
    expect(isRetryableConflict(null)).toBe(false);
    expect(isRetryableConflict({ code: 40001 })).toBe(false);
  });
});
