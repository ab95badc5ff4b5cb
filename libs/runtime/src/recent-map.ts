/**
 * Sets `key` in a Map used as a most-recently-used list (insertion order: oldest first) and drops
 * the oldest entries beyond `capacity`.
 */
export function setRecent<K, V>(map: Map<K, V>, key: K, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > capacity) map.delete(map.keys().next().value as K);
}
