/**
 * The general forward graph: T token rows of B sequences through every layer with materialised
 * activations, LoRA on any row, and lm_head on the rows asked for. It serves
 *   - prefill steps: each row a chunk of a prompt (count tokens from position pos; the cache
 *     already holds 0 .. pos - 1, a cached prefix is attended to, never recomputed), attention by
 *     PrefillAttention;
 *   - decode steps whose batch has LoRA rows: every row one token, attention by DecodeAttention
 *     and AttentionMerge (the fused decode kernels have no LoRA terms: decode-graph.ts).
 *
 * Per layer (docs/engine.md "Dense kernels", "Generation core"):
 *   x = rmsnorm(h); qkv = x Wqkv^T + b [+ LoRA q|k|v]; QkvPrep (q/k-norm, RoPE, K/V into the cache)
 *   att = attention(q, cache); h += att Wo^T + b [+ LoRA o]
 *   x = rmsnorm(h); gu = x Wgu^T + b [+ LoRA gate|up]; act = silu(g) u; h += act Wd^T + b [+ LoRA down]
 * Gemma 3 (model/config/model-config.ts): h starts as the embedding times its normaliser, act = gelu_tanh(g) u, and the
 * o_proj and down_proj outputs go through their own RMSNorm (sandwich norms) before the residual add,
 * so they land in x and RmsNorm adds them into h. Gemma decodes through this graph too (model-runner.ts).
 * Linear layers go through Gemv up to 64 rows (a short chunk keeps hundreds of workgroups) and
 * the tiled Gemm beyond. LoRA is a shrink and an expand per module group (kernels/lora.ts), run
 * only when some row has an adapter.
 *
 * Not here: buffers (step-buffers.ts), sampling and submission (model-runner.ts).
 */
import { layerWindow } from '../model/config/attention-window';
import type { KernelCall } from '../gpu/kernel-call';
import type { AttentionKernels, DenseKernels } from '../kernels/registry';
import type { DecodeSplitPlan } from '../kernels/attention-decode';
import type { LoraGroupName, LoraKernels, LoraLayout, LoraTables } from '../kernels/lora';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { lmHeadWeights, qkvPrepWeights } from '../model/weights/kernel-args';
import type { KvCache } from '../model/kv/kv-cache';
import { embeddingScaleOf } from '../model/weights/vector-values';
import { type WeightSet } from '../model/weights/weight-set';
import type { StepBuffers } from './step-buffers';

/** Largest row count the GEMV path takes (Gemv's limit). */
const GEMV_MAX_ROWS = 64;

export type ForwardAttention = { kind: 'prefill'; maxCount: number } | { kind: 'decode'; plan: DecodeSplitPlan };

export interface ForwardDims {
  /** Token rows (sum of the batch rows' counts). */
  T: number;
  /** Batch rows (sequences). */
  B: number;
  attention: ForwardAttention;
  /** Logit rows to compute: step.gather holds their token indices (R <= limits.maxBatch). */
  R: number;
  /** Rows with an adapter exist: record the LoRA calls (tables in `lora`). */
  lora: boolean;
}

export interface ForwardContext {
  weights: WeightSet;
  kv: KvCache;
  dense: DenseKernels;
  attention: AttentionKernels;
  loraKernels: LoraKernels;
  loraLayout: LoraLayout;
  /** The adapter pool's tables; needed when dims.lora. */
  loraTables: Omit<LoraTables, 'tokenSlots'> | null;
  step: StepBuffers;
}

/** The calls of one step, in order. Dims must fit the step buffers. */
export function encodeForward(f: ForwardContext, d: ForwardDims): KernelCall[] {
  const { weights, kv, dense, attention, step } = f;
  const cfg = weights.config;
  const { hiddenSize: C, numHeads: NH, headDim: HS, intermediateSize: F, rmsNormEps: eps } = cfg;
  const { T, B } = d;
  if (T > step.limits.maxTokens) throw new Error(`forward: ${T} tokens exceed the step budget ${step.limits.maxTokens}`);
  if (d.lora && !f.loraTables) throw new Error('forward: LoRA rows without adapter tables');
  const calls: KernelCall[] = [];
  const vectors = weights.vectors;

  const linear = (out: GPUBuffer, x: GPUBuffer, w: PackedMatrix, bias: number | null, accumulate: boolean) => {
    if (T <= GEMV_MAX_ROWS) {
      calls.push(...dense.gemv.encode({ out, x, weight: w, B: T, vectors, bias, accumulate }));
    } else {
      calls.push(
        ...dense.gemm.encode({ out, a: x, b: { weight: w, layout: 'rows-are-n' }, M: T, N: w.rows, K: w.cols, vectors, bias, accumulate }),
      );
    }
  };
  const lora = (group: LoraGroupName, layer: number, x: GPUBuffer, y: GPUBuffer) => {
    if (!d.lora) return;
    const tables = { ...f.loraTables!, tokenSlots: step.tokenSlots };
    calls.push(...f.loraKernels.encode({ ...tables, layout: f.loraLayout, group, layer, u: step.loraU, x, y, T }));
  };

  // h += y W^T + b [+ LoRA], or with Gemma's sandwich norm h += rmsnorm(y W^T + b [+ LoRA], outNorm).
  const residualBranch = (y: GPUBuffer, w: PackedMatrix, bias: number | null, group: LoraGroupName, l: number, outNorm: number | null) => {
    const out = outNorm === null ? step.h : step.x;
    linear(out, y, w, bias, outNorm === null);
    lora(group, l, y, out);
    if (outNorm !== null)
      calls.push(...dense.rmsnorm.encode({ out: step.h, inp: step.x, N: T, C, vectors, weightOffset: outNorm, eps, accumulate: true }));
  };

  const scale = embeddingScaleOf(cfg);
  calls.push(...dense.embedding.encode({ out: step.h, tokens: step.tokens, embedding: weights.embedding, T, scale }));
  for (let l = 0; l < cfg.numLayers; l++) {
    const w = weights.layers[l];
    calls.push(...dense.rmsnorm.encode({ out: step.x, inp: step.h, N: T, C, vectors, weightOffset: w.inputNorm, eps }));
    linear(step.qkv, step.x, w.qkv, w.qkvBias, false);
    lora('qkv', l, step.x, step.qkv);
    // A hybrid model's sliding layers read their own pool's block table (model/kv/kv-cache.ts).
    const cache = { k: kv.k[l], v: kv.v[l], blockTable: kv.tableOf(l), rows: step.rows };
    calls.push(
      ...attention.qkvPrep.encode({
        ...cache,
        ...qkvPrepWeights(weights, l),
        q: step.q,
        qkv: step.qkv,
        T,
        B,
        maxBlocksPerSeq: kv.maxBlocksPerSeq,
      }),
    );
    if (d.attention.kind === 'prefill') {
      calls.push(
        ...attention.prefill.encode({
          ...cache,
          q: step.q,
          out: step.att,
          B,
          T,
          maxCount: d.attention.maxCount,
          maxBlocksPerSeq: kv.maxBlocksPerSeq,
          window: layerWindow(cfg, l),
        }),
      );
    } else {
      if (T !== B) throw new Error(`forward: decode attention needs one token per row (T ${T}, B ${B})`);
      const plan = d.attention.plan;
      calls.push(
        ...attention.decode.encode({
          ...cache,
          q: step.q,
          partials: step.partials,
          B,
          maxBlocksPerSeq: kv.maxBlocksPerSeq,
          plan,
          window: layerWindow(cfg, l),
        }),
      );
      calls.push(...attention.merge.encode({ out: step.att, partials: step.partials, B, NH, HS, numSplits: plan.numSplits }));
    }
    residualBranch(step.att, w.o, w.oBias, 'o', l, w.attnOutNorm);
    calls.push(...dense.rmsnorm.encode({ out: step.x, inp: step.h, N: T, C, vectors, weightOffset: w.postNorm, eps }));
    linear(step.gu, step.x, w.gateUp, w.gateUpBias, false);
    lora('gateUp', l, step.x, step.gu);
    calls.push(...dense.swiglu.encode({ out: step.act, gateUp: step.gu, T, F, act: cfg.hiddenAct }));
    residualBranch(step.act, w.down, w.downBias, 'down', l, w.mlpOutNorm);
  }
  if (d.R > 0) {
    calls.push(
      ...dense.lmHead.encode({
        head: lmHeadWeights(weights),
        logits: step.logits,
        hidden: step.h,
        R: d.R,
        rows: step.gather,
        scratch: step.scratch,
      }),
    );
  }
  return calls;
}

/** lm_head over prompt-logprob rows (step.promptGather) into step.promptLogits. */
export function encodePromptLogits(f: ForwardContext, rows: number): KernelCall[] {
  const { weights, dense, step } = f;
  return dense.lmHead.encode({
    head: lmHeadWeights(weights),
    logits: step.promptLogits,
    hidden: step.h,
    R: rows,
    rows: step.promptGather,
    scratch: step.promptScratch,
  });
}
