// server/lib/capped-map.ts: the bound of the in-memory caches (API keys, owner JWTs, Login app
// keys, rate-limit keys, LOGIN misses).
import { expect, it } from 'vitest';
import { setCapped } from '#server/lib/capped-map.js';

it('never holds more than max entries; a new key drops the oldest, replacing a value drops nothing', () => {
  const map = new Map<string, number>();
  for (const key of ['a', 'b', 'c']) setCapped(map, key, 1, 3);
  setCapped(map, 'b', 2, 3); // replaced in place
  expect([...map]).toEqual([
    ['a', 1],
    ['b', 2],
    ['c', 1],
  ]);
  setCapped(map, 'd', 1, 3);
  expect([...map.keys()]).toEqual(['b', 'c', 'd']);
  for (let i = 0; i < 100; i++) setCapped(map, `k${i}`, i, 3);
  expect([...map.keys()]).toEqual(['k97', 'k98', 'k99']);
});
