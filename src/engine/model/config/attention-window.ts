/**
 * Sliding-window attention: which keys a query sees, per layer. A 'sliding_attention' layer's query
 * at position p sees keys p - W + 1 ..= p (W = ModelConfig.slidingWindow); a 'full_attention'
 * layer sees 0 ..= p. The kernels take W as a uniform (`window`, 0 = full causal), the reference
 * takes the same number, and the KV block manager frees blocks that no query can see any more: for
 * the whole model when every layer slides (modelWindow), or in a pool of their own for the sliding
 * layers of a hybrid model (hybridWindow, localLayers: Gemma 3's 5 local : 1 global, Qwen2's
 * max_window_layers, `layer_types`).
 *
 * Sources, which agree: transformers masking_utils `sliding_window_overlay` (kv_idx > q_idx -
 * sliding_window), and llama.cpp `llama_hparams::is_masked_swa` with LLAMA_SWA_TYPE_STANDARD (masked
 * when p1 - p0 >= n_swa).
 * Not here: the masks themselves (kernels, reference/attention.ts), block freeing (model/kv/block-manager.ts).
 */
import type { ModelConfig } from './model-config';

/** The window of layer `layer` in tokens; 0 for a full-attention layer. */
export function layerWindow(cfg: Pick<ModelConfig, 'slidingWindow' | 'layerTypes'>, layer: number): number {
  return cfg.layerTypes[layer] === 'sliding_attention' && cfg.slidingWindow !== null ? cfg.slidingWindow : 0;
}

/** First key position a query at `pos` sees under `window` (0 = full attention). */
export function firstVisibleKey(pos: number, window: number): number {
  return window > 0 && pos >= window ? pos - window + 1 : 0;
}

/**
 * The window that bounds every layer, or 0 if some layer attends fully: keys before
 * firstVisibleKey(pos, w) are dead for the whole model, so their KV blocks can be freed.
 */
export function modelWindow(cfg: Pick<ModelConfig, 'slidingWindow' | 'layerTypes'>): number {
  if (cfg.slidingWindow === null || cfg.layerTypes.length === 0) return 0;
  return cfg.layerTypes.every((t) => t === 'sliding_attention') ? cfg.slidingWindow : 0;
}

/**
 * The window of a hybrid model's sliding layers (some layers slide, some attend fully), 0 otherwise:
 * those layers keep their K/V in a KV pool of their own that drops blocks behind the window, while
 * the full-attention layers keep every block (model/kv/kv-pools.ts).
 */
export function hybridWindow(cfg: Pick<ModelConfig, 'slidingWindow' | 'layerTypes'>): number {
  if (cfg.slidingWindow === null || modelWindow(cfg) > 0) return 0;
  return cfg.layerTypes.some((t) => t === 'sliding_attention') ? cfg.slidingWindow : 0;
}

/** The layers of a hybrid model that slide (hybridWindow > 0), in order; none otherwise. */
export function localLayers(cfg: Pick<ModelConfig, 'slidingWindow' | 'layerTypes'>): number[] {
  if (hybridWindow(cfg) === 0) return [];
  return cfg.layerTypes.flatMap((t, l) => (t === 'sliding_attention' ? [l] : []));
}
