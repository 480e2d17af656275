/**
 * A least-recently-used map with a fixed number of entries; an evicted value is handed to
 * `onEvict` (compiled grammars free their WASM memory there).
 *
 * Not here: anything about grammars.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();

  constructor(
    readonly capacity: number,
    private readonly onEvict: (value: V, key: K) => void = () => {},
  ) {
    if (!(capacity >= 1)) throw new Error(`LruCache capacity must be at least 1, got ${capacity}`);
  }

  get size(): number {
    return this.map.size;
  }

  /** The value, now the most recently used; undefined when absent. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  /** Stores the value as the most recently used, evicting the least recently used beyond capacity. */
  set(key: K, value: V): void {
    const old = this.map.get(key);
    this.map.delete(key);
    if (old !== undefined && old !== value) this.onEvict(old, key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) {
      const [oldestKey, oldest] = this.map.entries().next().value as [K, V];
      this.map.delete(oldestKey);
      this.onEvict(oldest, oldestKey);
    }
  }

  /** Keys from least to most recently used. */
  keys(): K[] {
    return [...this.map.keys()];
  }

  /** Drops every entry without calling onEvict (their owner is gone). */
  forget(): void {
    this.map.clear();
  }
}
