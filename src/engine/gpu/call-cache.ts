/**
 * Recorded kernel calls kept by key (record once, replay): the decode graphs of each batch shape,
 * the training graphs of each micro-batch shape. Building calls is not free (a bind group and a
 * small uniform buffer each), and a run of same-shaped steps should encode once. A small LRU:
 * when a new entry does not fit, the least recently used one is evicted and its calls disposed,
 * at once, or with `deferDispose` at the next `release()` (when the submissions that used them
 * may still be in flight).
 *
 * Not here: what the calls are (generate/decode-graph.ts, train/graph-*.ts).
 */
import type { KernelCall } from './kernel-call';

export interface CallCacheOptions<V> {
  /** The calls an entry owns (disposed with it). */
  callsOf: (entry: V) => readonly KernelCall[];
  /** Keep evicted calls until `release()` instead of disposing them at once. */
  deferDispose?: boolean;
}

export class CallCache<V> {
  private readonly entries = new Map<string, V>();
  /** Evicted calls waiting for `release()` (deferDispose only). */
  private retired: KernelCall[] = [];

  constructor(
    private readonly capacity: number,
    private readonly options: CallCacheOptions<V>,
  ) {}

  get(key: string, build: () => V): V {
    let entry = this.entries.get(key);
    if (entry !== undefined) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry;
    }
    entry = build();
    this.entries.set(key, entry);
    while (this.entries.size > this.capacity) {
      const [oldest, old] = this.entries.entries().next().value as [string, V];
      this.entries.delete(oldest);
      if (this.options.deferDispose) this.retired.push(...this.options.callsOf(old));
      else for (const c of this.options.callsOf(old)) c.dispose();
    }
    return entry;
  }

  /** Frees evicted calls; call when the GPU is done with everything submitted so far. */
  release(): void {
    for (const c of this.retired) c.dispose();
    this.retired = [];
  }

  /** Frees every call, kept or evicted. */
  clear(): void {
    this.release();
    for (const entry of this.entries.values()) for (const c of this.options.callsOf(entry)) c.dispose();
    this.entries.clear();
  }
}
