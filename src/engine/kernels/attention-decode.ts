/**
 * DecodeAttention: one query token per batch row against its sequence's paged KV cache, split over
 * the KV length across workgroups (flash-decoding). Writes the partials of docs/engine.md
 * (f32 [B, NH, numSplits, HS + 2]: o, m, l per split); AttentionMerge (attention-merge.ts) or the
 * dense engineer's fused o_proj prologue turns them into [B, NH * HS].
 *
 * Why split: one workgroup per (row, head) serialises a long context on a handful of workgroups
 * and leaves most of a GPU idle at batch 1. Here workgroup (split, kv head, row) handles all
 * G = NH / NKV query heads of one kv head (GQA: K/V read once for G heads, never repeated).
 *
 * Split heuristic (`plan`): aim for `targetWorkgroups` (default 256: two or more waves on an H100's
 * 132 SMs or a 4090's 128, plenty for an M2's 10 cores) = B * NKV * numSplits; the split length is
 * ceil(maxContext / wanted splits) rounded up to a KV block (16), at least `minSplitLen` (default 64:
 * below that the fixed cost per workgroup (q load, reductions, a partial of HS + 2 floats per head
 * for the merge) outweighs the keys it reads) and at most `maxSplitLen`: 512, or less when
 * workgroup memory holds less (a split's scores stay there so its softmax is exact and each exp
 * is computed once; see SPLIT_CAP). Pipelines are per split capacity (`capacityFor`).
 * The longest context sets the plan for the whole step; shorter rows write empty splits (m = -big,
 * l = 0), which the merge weighs to zero. So a plan, and a call encoded with it, stays valid while
 * every row's context is <= splitLen * numSplits: a decode graph re-encodes only past that.
 *
 * Workgroup: 64 threads. Scores: LANES threads per key (the largest divisor of HS/4 <= HS/16, so each
 * thread dots 16 floats per key and neighbours read neighbouring vec4s), reduced through
 * double-buffered workgroup memory, one barrier per chunk of 64 / LANES keys, the next chunk's
 * keys already loading into registers while the barrier waits. p.V: thread (vec4
 * column of HS, key group) reads V rows coalesced, accumulating all G heads in registers.
 * Supported: HS a multiple of 4 up to 256 whose HS/4 leaves <= 16 vec4s per lane (16, 24, 48, 64,
 * 80, 96, 128, 256 all do), G up to 16.
 *
 * Sliding window (`a.window`): splits tile the keys from the window's first on, so keys in freed
 * blocks are never read and a plan for min(context, window) keys covers a sliding layer (the model
 * runner plans so when every layer slides).
 *
 * Reference: reference/attention-paged.ts `attentionDecodePartials`.
 */
import code from './attention-decode.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { KV_BLOCK } from './kv-layout';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import { ATTENTION_COMMON_WGSL, kvBindings, largestDivisorAtMost, workgroupStorageBudget, type PagedKvArgs } from './attention-shared';
import { params, ro, rw, type KernelSpec } from './spec';

export const DECODE_ATTENTION_SPEC: KernelSpec = {
  name: 'attention-decode',
  bindings: {
    partials: rw('partials', 'f32', '[B, NH, numSplits, HS + 2]'),
    q: ro('q', 'vec4<f32>', '[B, NH, HS]'),
    ...kvBindings('vec4<f32>'),
  },
  // splitLen: keys per split, a multiple of KV_BLOCK, <= MAX_SPLIT; scale = 1 / sqrt(HS);
  // window: sliding window in tokens (model/config/attention-window.ts), 0 = full causal
  uniforms: params('maxBlocksPerSeq splitLen numSplits scale:f32 window', { var: 'params' }),
  shaders: { main: [ATTENTION_COMMON_WGSL, code] },
};

export interface AttentionShape {
  NH: number;
  NKV: number;
  HS: number;
}

export interface DecodeSplitPlan {
  /** Keys per split, a multiple of 16. */
  splitLen: number;
  numSplits: number;
}

export interface DecodeAttentionOptions {
  /** Workgroup bytes to plan for (default: the device limit); tests force 16 KiB, the WebGPU default. */
  workgroupStorageBytes?: number;
  /** Workgroups a step should launch when contexts allow (default 256). */
  targetWorkgroups?: number;
  /** Shortest split worth a workgroup (default 64 tokens). */
  minSplitLen?: number;
}

/** A decode step (the step's k, v already in the cache at each row's pos) and its split plan. */
export interface DecodeAttentionArgs extends PagedKvArgs {
  /** f32 [B, NH, numSplits, HS + 2], written. */
  partials: BufferRef;
  /** f32 [B, NH, HS]: this step's queries after RoPE. */
  q: BufferRef;
  plan: DecodeSplitPlan;
}

const WG = 64;
const MAX_G = 16;
/**
 * Longest split, whatever the memory: a split's scores live in workgroup memory, which WebGPU
 * zero-fills at every workgroup start and which bounds how many workgroups share an SM (a 32 KiB
 * workgroup leaves an H100 SM 7 of them, 448 threads). 512 keys per split still gives 64 splits
 * per kv head at 32k context: the merge stays a small fraction of the K/V read.
 */
const SPLIT_CAP = 512;

/** Threads per key in the score phase: the largest divisor of HS/4 that is <= HS/16. */
export function decodeLanes(HS: number): number {
  const HS4 = HS / 4;
  return largestDivisorAtMost(HS4, Math.max(1, HS4 / 4));
}

/** Floats of the kernel's reduction scratch (phase-1 partials, max tree, p.V reduction). */
function scratchFloats(shape: AttentionShape): number {
  const G = shape.NH / shape.NKV;
  const HS4 = shape.HS / 4;
  const lanes = decodeLanes(shape.HS);
  const KPC = Math.floor(WG / lanes);
  const KG = Math.floor(WG / HS4);
  return Math.max(2 * G * KPC * lanes, G * WG, KG * G * shape.HS + KG * G);
}

/** The longest split the kernel can hold in `budgetBytes` of workgroup memory (0 if none fits). */
export function decodeMaxSplitLen(shape: AttentionShape, budgetBytes: number): number {
  const G = shape.NH / shape.NKV;
  const fixed = G * shape.HS + scratchFloats(shape) + MAX_G + 2;
  return Math.max(0, Math.min(SPLIT_CAP, Math.floor((budgetBytes / 4 - fixed) / G / KV_BLOCK) * KV_BLOCK));
}

export interface SplitPolicy {
  maxSplitLen: number;
  /** Shortest split worth a workgroup. */
  minSplitLen: number;
  /** Workgroups a step should launch when contexts allow. */
  targetWorkgroups: number;
}

/** The split plan of a step with B rows whose longest context (pos + 1) is `maxContext` (see the header). */
export function planDecodeSplits(maxContext: number, B: number, NKV: number, policy: SplitPolicy): DecodeSplitPlan {
  if (!(maxContext >= 1) || !(B >= 1)) throw new Error(`planDecodeSplits: bad maxContext ${maxContext} or B ${B}`);
  const wanted = Math.max(1, Math.ceil(policy.targetWorkgroups / (B * NKV)));
  const even = Math.ceil(Math.ceil(maxContext / wanted) / KV_BLOCK) * KV_BLOCK;
  const splitLen = Math.min(policy.maxSplitLen, Math.max(Math.min(policy.minSplitLen, policy.maxSplitLen), even));
  return { splitLen, numSplits: Math.ceil(maxContext / splitLen) };
}

/** Floats of a partials buffer that serves every step with <= maxB rows and contexts <= maxContext. */
export function decodePartialsFloats(shape: AttentionShape, policy: SplitPolicy, maxB: number, maxContext: number): number {
  // For a given B, numSplits grows with the context (the split length only grows until capped).
  let most = 0;
  for (let B = 1; B <= maxB; B++) most = Math.max(most, B * planDecodeSplits(maxContext, B, shape.NKV, policy).numSplits);
  return most * shape.NH * (shape.HS + 2);
}

export class DecodeAttention extends SpecKernel {
  readonly maxSplitLen: number;
  readonly lanes: number;
  readonly policy: SplitPolicy;
  /** Split capacities with a pipeline each (see `capacityFor`). */
  readonly capacities: number[];

  constructor(
    ctx: KernelContext,
    readonly shape: AttentionShape,
    opts: DecodeAttentionOptions = {},
  ) {
    super(ctx, DECODE_ATTENTION_SPEC);
    const { NH, NKV, HS } = shape;
    const G = NH / NKV;
    if (!Number.isInteger(G)) throw new Error(`DecodeAttention: ${NH} heads are not a multiple of ${NKV} kv heads`);
    if (G > MAX_G) throw new Error(`DecodeAttention: ${G} query heads per kv head exceed ${MAX_G}`);
    if (HS % 4 !== 0 || HS / 4 > WG) throw new Error(`DecodeAttention: head dim ${HS} must be a multiple of 4 and <= ${4 * WG}`);
    const HS4 = HS / 4;
    this.lanes = decodeLanes(HS);
    if (HS4 / this.lanes > 16) throw new Error(`DecodeAttention: head dim ${HS}: HS/4 has no divisor leaving <= 16 vec4s per thread`);
    const budget = workgroupStorageBudget(ctx, opts.workgroupStorageBytes);
    this.maxSplitLen = decodeMaxSplitLen(shape, budget);
    if (this.maxSplitLen < KV_BLOCK) {
      throw new Error(`DecodeAttention: NH ${NH}, NKV ${NKV}, HS ${HS} need more than ${budget} bytes of workgroup memory`);
    }
    this.policy = {
      maxSplitLen: this.maxSplitLen,
      minSplitLen: Math.max(KV_BLOCK, opts.minSplitLen ?? 64),
      targetWorkgroups: opts.targetWorkgroups ?? 256,
    };
    this.capacities = [64, 128, 256, 512].filter((c) => c < this.maxSplitLen).concat(this.maxSplitLen);
  }

  /**
   * The workgroup arrays of a split's scores are sized for a capacity >= its length: WebGPU
   * zero-fills workgroup memory at every workgroup start, and a smaller footprint lets more
   * workgroups share an SM, so short splits (the common case at batch 1, see the plan) use a
   * small pipeline. One pipeline per capacity, compiled on first use.
   */
  capacityFor(splitLen: number): number {
    return this.capacities.find((c) => c >= splitLen) ?? this.maxSplitLen;
  }

  private pipelineFor(splitLen: number): GPUComputePipeline {
    const cap = this.capacityFor(splitLen);
    const { NH, NKV, HS } = this.shape;
    const G = NH / NKV;
    return this.pipeline({
      overrides: {
        WG,
        HS,
        NKV,
        G,
        LANES: this.lanes,
        MAX_SPLIT: cap,
        Q_LEN: (G * HS) / 4,
        S_LEN: G * cap,
        SCRATCH_LEN: scratchFloats(this.shape),
        KV_BLOCK,
      },
    });
  }

  /** The split plan of a step whose longest context (pos + 1) is `maxContext`, with B rows. */
  plan(maxContext: number, B: number): DecodeSplitPlan {
    return planDecodeSplits(maxContext, B, this.shape.NKV, this.policy);
  }

  /**
   * Floats of the partials buffer that covers every step with at most `maxB` rows and contexts up
   * to `maxContext` (numSplits is largest at the longest context, for every B).
   */
  partialsFloats(maxB: number, maxContext: number): number {
    return decodePartialsFloats(this.shape, this.policy, maxB, maxContext);
  }

  /** The dispatch of one step (record it after the step's k, v are in the cache). */
  encode(a: DecodeAttentionArgs): KernelCall[] {
    const { NH, NKV, HS } = this.shape;
    const { B, plan } = a;
    const label = 'attention-decode';
    checkDim(label, 'B', B);
    checkDim(label, 'numSplits', plan.numSplits);
    checkDim(label, 'maxBlocksPerSeq', a.maxBlocksPerSeq);
    checkDim(label, 'window', a.window ?? 0, 0);
    if (plan.splitLen % KV_BLOCK !== 0 || plan.splitLen < KV_BLOCK || plan.splitLen > this.maxSplitLen) {
      throw new Error(`${label}: split length ${plan.splitLen} must be a multiple of ${KV_BLOCK} in [${KV_BLOCK}, ${this.maxSplitLen}]`);
    }
    checkElements(label, 'partials', a.partials, B * NH * plan.numSplits * (HS + 2));
    checkElements(label, 'q', a.q, B * NH * HS);
    checkElements(label, 'rows', a.rows, B * 4);
    const call = this.call({
      pipeline: this.pipelineFor(plan.splitLen),
      buffers: { partials: a.partials, q: a.q, k: a.k, v: a.v, blockTable: a.blockTable, rows: a.rows },
      uniforms: {
        maxBlocksPerSeq: a.maxBlocksPerSeq,
        splitLen: plan.splitLen,
        numSplits: plan.numSplits,
        scale: 1 / Math.sqrt(HS),
        window: a.window ?? 0,
      },
      workgroups: [plan.numSplits, NKV, B],
    });
    return [call];
  }
}
