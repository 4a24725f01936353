// The most events in any sliding window: the campaign tests and the campaign benchmark check with
// it that a number's configured rate is never exceeded.

/** The most of `times` (ms) in any window of `windowMs` (sliding, starting at each time). */
export function maxInWindow(times: number[], windowMs = 1000): number {
  const t = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[j]! < t[i]! - windowMs + 1) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
