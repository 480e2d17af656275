/**
 * Recorded calls of the training graphs, kept per micro-batch shape (record once, replay): a
 * micro-batch's calls depend only on its shape (tokens, sequences, longest sequence) and the
 * session's fixed buffers, never on the token values (those are in buffers written before each
 * submission). Building them is not free: ~2000 calls for a SmolLM2-135M step, each a bind group
 * and a small uniform buffer, about a millisecond apiece on this machine's Dawn (docs/engine.md
 * "Training"), so a run of same-shaped micro-batches (benchmarks, SFT batches of equal length,
 * recomputed forwards) encodes once. A small LRU: shapes that do not repeat cost one build each,
 * as without the cache.
 *
 * Not here: the calls themselves (graph-*.ts).
 */
import type { KernelCall } from '../gpu/kernel-call';

export class CallCache {
  private readonly entries = new Map<string, KernelCall[]>();
  /** Evicted calls; disposed by `release()` once the submissions that used them have finished. */
  private retired: KernelCall[] = [];

  constructor(private readonly capacity = 6) {}

  get(key: string, build: () => KernelCall[]): KernelCall[] {
    let calls = this.entries.get(key);
    if (calls) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, calls);
      return calls;
    }
    calls = build();
    this.entries.set(key, calls);
    while (this.entries.size > this.capacity) {
      const [oldest, old] = this.entries.entries().next().value as [string, KernelCall[]];
      this.entries.delete(oldest);
      this.retired.push(...old);
    }
    return calls;
  }

  /** Frees evicted calls; call when the GPU is done with everything submitted so far. */
  release(): void {
    for (const c of this.retired) c.dispose();
    this.retired = [];
  }

  dispose(): void {
    this.release();
    for (const calls of this.entries.values()) for (const c of calls) c.dispose();
    this.entries.clear();
  }
}
