/**
 * The KV cache's memory plan: how a byte budget splits into the blocks of the main pool (every
 * layer, or a hybrid model's full-attention layers) and of the local pool (a hybrid model's sliding
 * layers, config/attention-window.ts hybridWindow). A sliding layer needs at most its window's blocks per
 * sequence, plus the block being written and one prefill step's, however long the sequence grows;
 * so the local pool is sized from the window and the most sequences alive at once, and every other
 * byte goes to the full-attention layers, whose blocks bound the context. The local pool is never
 * made larger than the main one (a sequence holds no more local blocks than main ones): on a budget
 * too tight for that, both pools get the uniform split's count, as one pool would.
 *
 * Not here: the buffers (kv-cache.ts), who owns which block (model/kv/block-manager.ts).
 * Reference: vLLM v1 `SlidingWindowManager` (vllm/v1/core/single_type_kv_cache_manager.py), which
 * frees a sliding-window group's blocks once they leave the window.
 */
import { hybridWindow, localLayers } from '../config/attention-window';
import type { ModelConfig } from '../config/model-config';
import { kvBlockBytes, kvBlocksThatFit, kvShapeOf, type KvLimits } from './kv-cache';
import { KV_BLOCK } from '../../kernels/kv-layout';

export interface KvPoolPlan {
  /** Blocks of the main pool. */
  numBlocks: number;
  /** The local pool of a hybrid model: its layers, blocks and window; null otherwise. */
  local: { layers: number[]; numBlocks: number; window: number } | null;
}

export interface KvPoolOptions {
  /** GPU bytes of the whole cache (every layer, K and V). */
  budgetBytes: number;
  /** Sequences alive at once (block-table rows). */
  maxSeqs: number;
  /** Tokens of one prefill step. */
  prefillChunk: number;
}

/**
 * Local blocks every sequence can hold at once: per sequence the window's blocks, the one being
 * written and one partly behind the window; plus one prefill step's chunk blocks (the rows of a step
 * share its token budget).
 */
export function localBlocksWanted(window: number, maxSeqs: number, prefillChunk: number): number {
  return maxSeqs * (Math.ceil(window / KV_BLOCK) + 2) + Math.ceil(prefillChunk / KV_BLOCK);
}

/** The block counts of the pools for `cfg` within the budget and the device's binding limit. */
export function planKvPools(cfg: ModelConfig, opts: KvPoolOptions, limits: KvLimits): KvPoolPlan {
  const shape = kvShapeOf(cfg);
  const uniform = kvBlocksThatFit(shape, opts.budgetBytes, limits);
  const layers = localLayers(cfg);
  if (layers.length === 0) return { numBlocks: uniform, local: null };
  const window = hybridWindow(cfg);
  const wanted = localBlocksWanted(window, opts.maxSeqs, opts.prefillChunk);
  if (wanted >= uniform) return { numBlocks: uniform, local: { layers, numBlocks: uniform, window } };
  // The rest of the budget, in one-layer K (or V) blocks, after the local layers' K and V.
  const rest = opts.budgetBytes / (2 * kvBlockBytes(shape)) - layers.length * wanted;
  const byBudget = Math.floor(rest / (cfg.numLayers - layers.length));
  const byBinding = kvBlocksThatFit({ ...shape, numLayers: 1 }, Number.POSITIVE_INFINITY, limits);
  return { numBlocks: Math.min(byBudget, byBinding), local: { layers, numBlocks: wanted, window } };
}
