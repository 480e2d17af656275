/**
 * What a ModelRunner step is asked and what it returns (model-runner.ts): the batch rows, the sampled
 * rows, prompt logprobs, block copies, and the step's result with its device-independent figures
 * (graph, dispatches, bytes read back); plus the runner's options.
 *
 * Not here: running a step (model-runner.ts), reading it back (step-readback.ts).
 */
import type { SamplerRowOutput, SamplerWorkgroupSize } from '../kernels/sampler';
import type { DenseKernels } from '../kernels/registry';
import type { DecodeGraphChoice } from './decode-graph';
import type { BlockCopy } from '../model/kv/kv-cache';
import type { PositionLogprobs } from '../sampling/logprobs';
import type { SamplerStepRow } from '../sampling/sampler-row';

export interface RunnerRow {
  /** Block-table row of the sequence. */
  seq: number;
  /** Position of the first token of this step (the tokens before it are in the cache). */
  pos: number;
  /** This step's tokens of the row (one in decode, a chunk in prefill). */
  tokens: readonly number[];
  /** LoRA pool slot, or NO_ADAPTER. */
  adapterSlot: number;
}

/** One sampler row: the logits of `row`'s token `at` (default its last), sampled for `slot`. */
export interface SampleRequest extends SamplerStepRow {
  row: number;
  /** Index of the token in the row whose logits are sampled (jump-forward drafts sample every position). */
  at?: number;
}

/** Prompt logprobs of positions [first, first + count) of one row's tokens (targets: the next tokens). */
export interface PromptLogprobsRequest {
  row: number;
  first: number;
  targets: readonly number[];
  k: number;
}

export interface StepSpec {
  rows: readonly RunnerRow[];
  samples: readonly SampleRequest[];
  promptLogprobs?: PromptLogprobsRequest | null;
  /** Whole-block copies [src, dst, pool] recorded before the step's pass (forks made since the last step). */
  copiesBefore?: readonly BlockCopy[];
  /**
   * A decode step submitted before the previous step was read back: row b's input id is the token
   * the previous step sampled for its row b, copied on the GPU from the sampler's output (the
   * rows' `tokens` are placeholders). The previous step must have sampled these rows in this order.
   */
  tokensFromLastSample?: boolean;
  /** Copies after the pass (forks from blocks this step writes: `n` choices at the end of a prompt). */
  copiesAfter?: readonly BlockCopy[];
}

export interface StepResult {
  sampled: SamplerRowOutput[];
  promptLogprobs: PositionLogprobs[] | null;
  /** Which graph ran, and its dispatch counts (bench figures). */
  graph: 'decode-fused' | 'decode-unfused' | 'decode-folded' | 'decode-fused-lora' | 'decode-lora' | 'decode-general' | 'prefill';
  dispatches: number;
  /** Bytes copied back to the CPU. */
  readbackBytes: number;
}

export interface RunnerOptions {
  dense: DenseKernels;
  /** Most tokens in one prefill step. Default 512. */
  maxTokens?: number;
  /** Most sequences in a step (and block-table rows, sampler slots). Default kv.maxSeqs. */
  maxBatch?: number;
  /** Largest batch decoded with the fused MLP (split-K partials); larger batches use the GEMV pair. Default 4. */
  fusedMaxBatch?: number;
  /** Which graph decodes (decode-graph.ts DecodeGraphChoice). Default 'auto'. */
  decodeGraph?: DecodeGraphChoice;
  /** DecodeMlp's slice width (decode-mlp.ts DEFAULT_MLP_SLICE); a bench setting. */
  mlpSlice?: number;
  /** Bytes for prompt-logprob logits rows. Default 64 MiB. */
  promptLogitsBytes?: number;
  samplerWorkgroupSize?: SamplerWorkgroupSize;
}
