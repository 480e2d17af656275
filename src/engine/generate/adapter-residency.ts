/**
 * AdapterResidency: getting a request's LoRA adapter into the model's LoraPool before it is
 * admitted. The first request naming an adapter starts `LoraAdapter.load()` (IndexedDB in the app);
 * requests wait, not block the queue, until it is uploaded. An upload that finds the pool full of
 * adapters in use is retried when the scheduler asks again (after some request released one).
 * A load or validation failure fails the requests of that adapter only, and is forgotten so the
 * next request tries again.
 *
 * Not here: the pool itself (lora-pool.ts), admission (scheduler.ts).
 */
import type { TensorData } from '../tensor/tensor-data';
import type { LoraPool } from './lora-pool';
import type { LoraAdapter } from './types';

export type AdapterState = { ready: true; slot: number } | { ready: false; error?: Error };

export class AdapterResidency {
  private readonly loading = new Map<string, Promise<void>>();
  private readonly loaded = new Map<string, { adapter: LoraAdapter; tensors: TensorData[] }>();
  private readonly failed = new Map<string, Error>();

  constructor(
    private readonly pool: () => LoraPool,
    /** Called when a load finishes (the scheduler re-runs admission). */
    private readonly onChange: () => void,
  ) {}

  /** Whether the adapter can be used now; starts loading it when needed. */
  ensure(adapter: LoraAdapter): AdapterState {
    const pool = this.pool();
    if (pool.has(adapter.key)) return { ready: true, slot: pool.slotOf(adapter.key)! };
    const error = this.failed.get(adapter.key);
    if (error) {
      this.failed.delete(adapter.key);
      return { ready: false, error };
    }
    const got = this.loaded.get(adapter.key);
    if (got) {
      try {
        const slot = pool.upload(adapter.key, got.adapter.config, got.tensors);
        if (slot === null) return { ready: false };
        this.loaded.delete(adapter.key);
        return { ready: true, slot };
      } catch (e) {
        this.loaded.delete(adapter.key);
        return { ready: false, error: e instanceof Error ? e : new Error(String(e)) };
      }
    }
    if (!this.loading.has(adapter.key)) {
      const p = adapter
        .load()
        .then(
          (tensors) => {
            this.loaded.set(adapter.key, { adapter, tensors });
          },
          (e: unknown) => {
            this.failed.set(
              adapter.key,
              new Error(`LoRA adapter ${adapter.key} could not be loaded: ${e instanceof Error ? e.message : String(e)}`),
            );
          },
        )
        .finally(() => {
          this.loading.delete(adapter.key);
          this.onChange();
        });
      this.loading.set(adapter.key, p);
    }
    return { ready: false };
  }
}
