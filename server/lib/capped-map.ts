// In-memory maps with a bound (caches of verified credentials, counters per client): at `max`
// entries a new key drops the oldest one. Maps iterate in insertion order, so the first key is
// the oldest. Replacing a key's value drops nothing.
export function setCapped<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
