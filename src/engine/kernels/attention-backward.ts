/**
 * AttentionBackward: the backward of PrefillAttention for the trainer, FlashAttention-2 style
 * (attention-backward.wgsl; the naive attention-backward-naive.wgsl is its readable definition and
 * GPU oracle; the math is in attention-backward-common.wgsl). Three dispatches per layer:
 *   delta  D = rowsum(dO * O) per (token, head), into the second half of `stats`
 *   dq     per query tile: P recomputed from q, K and the saved lse, dq = scale sum_j P (dP - D) k_j
 *   dkv    per key tile: dv = sum_i P dO_i, dk = scale sum_i P (dP - D) q_i over the later queries
 *          of all G heads of the kv head (GQA's sum over the group, in a fixed order)
 * No T x T matrix is stored and no float atomics are used; each output has one writer, so results
 * are deterministic. The two passes read K/V from the paged cache the forward attended to, with the
 * forward's batch rows and block table.
 *
 * Outputs go into the layout of the QKV projection, dqkv [T, (NH + 2 NKV) * HS] (dq in the q
 * columns, dk and dv in the k and v columns, overwritten): QkvPrepBackward then works on it in place
 * and one GEMM takes it through the fused qkv weight.
 *
 * A sliding window (`dims.window`, the forward's) masks P like the forward and skips key tiles
 * before a query tile's window and query tiles a window past a key tile.
 *
 * Scope: gradients reach keys of the batch's own tokens. A row with a cached prefix (pos > 0) gets
 * the prefix keys' contribution to dq, but the prefix keys themselves get no dk, dv (they have no
 * column in dqkv): the trainer runs whole sequences from position 0.
 *
 * Tiling (`attentionBackwardTiling`): LANES threads per query row / key, the smallest divisor of
 * HS / 4 that leaves each at most 4 vec4s (16 floats) per tensor held in registers (HS 64 -> 4
 * lanes, 128 -> 8, 48 -> 3, 16 -> 1): the dk/dv pass holds k, v, dk and dv, 64 floats. 64 threads.
 * Keys per dq tile (BK) and query rows per dk/dv tile (BQ): the largest of 16/8/4/2/1 whose staged
 * tiles and lane partials fit the workgroup memory (16 KiB: HS 64 -> 8 and 8; 32 KiB: 16 and 16),
 * at most 4 on software adapters (compile time; `maxTile`).
 * Reference: reference/attention.ts `attentionBackward`.
 */
import commonWgsl from './attention-backward-common.wgsl?raw';
import naiveCode from './attention-backward-naive.wgsl?raw';
import tiledCode from './attention-backward.wgsl?raw';
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { AttentionShape } from './attention-decode';
import { checkDim, checkElements, specCall, specLayout, type KernelLayout } from './spec-kernel';
import { ATTENTION_COMMON_WGSL, grid2d, workgroupStorageBudget } from './attention-shared';
import { BATCH_ROW, KV_BLOCK } from './kv-layout';
import { composeShader } from './shader';
import type { KernelSpec, UniformValues } from './spec';

export interface AttentionBackwardOptions {
  variant?: 'tiled' | 'naive';
  /** Workgroup bytes to plan for (default: the device limit); tests force 16 KiB, the WebGPU default. */
  workgroupStorageBytes?: number;
  /**
   * Largest key / query tile (16, 8, 4, 2 or 1). Default 16; 4 on software adapters, where a
   * pipeline's compile time grows with the unrolled tile (SwiftShader: ~35 s for the two 16-tile
   * pipelines at HS 64, ~6 s at 4).
   */
  maxTile?: number;
}

export interface AttentionBackwardIO {
  /** f32 [T, (NH + 2 NKV) * HS], written: dq, dk, dv in the q, k, v columns of each token row. */
  dqkv: BufferRef;
  /**
   * f32 [2, T, NH]: the first T * NH values are the forward's lse (bind this buffer's start as
   * PrefillAttention's `lse` output); the second T * NH are scratch that the first dispatch fills with D.
   */
  stats: BufferRef;
  /** f32 [T, NH * HS]: gradient of the attention output. */
  dout: BufferRef;
  /** f32 [T, NH * HS]: the forward's attention output. */
  out: BufferRef;
  /** f32 [T, NH, HS]: q after RoPE, as the forward read it. */
  q: BufferRef;
  /** This layer's KV cache as the forward left it. */
  k: BufferRef;
  v: BufferRef;
  blockTable: BufferRef;
  /** array<BatchRow> [B]: the forward's rows (tokens are the rows' tokens in row order). */
  rows: BufferRef;
}

export interface AttentionBackwardDims {
  B: number;
  /** Tokens in the batch (sum of counts). */
  T: number;
  /** Tokens of the longest row (sizes the grids). */
  maxCount: number;
  maxBlocksPerSeq: number;
  /** The forward's sliding window in tokens (model/attention-window.ts); 0 or absent: full causal. */
  window?: number;
}

export interface AttentionBackwardTiling {
  workgroupSize: number;
  lanes: number;
  /** Query rows per dq workgroup, and keys per dk/dv workgroup. */
  rowsPerTile: number;
  /** Keys per staged tile of the dq pass. */
  keysPerTile: number;
  /** Query rows per staged tile of the dk/dv pass. */
  queriesPerTile: number;
}

const MAX_DPT4 = 4;
const MAX_HS = 256;

export function attentionBackwardTiling(HS: number, budgetBytes: number, maxTile = 16): AttentionBackwardTiling {
  const HS4 = HS / 4;
  let lanes = 1;
  while (HS4 % lanes !== 0 || HS4 / lanes > MAX_DPT4) lanes++;
  const workgroupSize = lanes * Math.floor(64 / lanes);
  const part = (n: number) => 8 * (lanes > 1 ? n * workgroupSize : 1);
  const fits = (bytes: number) => bytes + 16 <= budgetBytes;
  const sizes = [16, 8, 4, 2, 1].filter((n) => n <= maxTile);
  const keysPerTile = sizes.find((bk) => fits(4 * 2 * bk * HS + part(bk)));
  const queriesPerTile = sizes.find((bq) => fits(4 * 2 * bq * HS + 12 * bq + part(bq)));
  if (!keysPerTile || !queriesPerTile)
    throw new Error(`AttentionBackward: head dim ${HS} does not fit ${budgetBytes} bytes of workgroup memory`);
  return { workgroupSize, lanes, rowsPerTile: workgroupSize / lanes, keysPerTile, queriesPerTile };
}

const BACKWARD_BINDINGS = {
  dqkv: { var: 'dqkv', type: 'vec4<f32>', access: 'read_write', doc: '[T, (NH + 2 NKV) * HS] (dq, dk, dv entries)' },
  stats: { var: 'stats', type: 'f32', access: 'read_write', doc: "[2, T, NH]: lse (the forward's), D (written by `delta`)" },
  dout: { var: 'dout', type: 'vec4<f32>', access: 'read', doc: '[T, NH * HS]' },
  out: { var: 'o_fwd', type: 'vec4<f32>', access: 'read', doc: "[T, NH * HS] the forward's output (delta entry)" },
  q: { var: 'q', type: 'vec4<f32>', access: 'read', doc: '[T, NH, HS] after RoPE' },
  k: { var: 'kCache', type: 'vec4<f32>', access: 'read', doc: "this layer's K cache [numBlocks, NKV, 16, HS]" },
  v: { var: 'vCache', type: 'vec4<f32>', access: 'read', doc: "this layer's V cache [numBlocks, NKV, 16, HS]" },
  blockTable: { var: 'blockTable', type: 'u32', access: 'read', doc: '[maxSeqs, maxBlocksPerSeq]' },
  rows: { var: 'rows', type: BATCH_ROW, access: 'read', doc: '[B]' },
} as const;
const GRADS = ['dqkv', 'stats', 'dout', 'q', 'k', 'v', 'blockTable', 'rows'] as const;

/** Both variants declare the same interface; each entry point's layout lists what it reads. */
export const ATTENTION_BACKWARD_SPEC: KernelSpec<keyof typeof BACKWARD_BINDINGS> = {
  name: 'attention-backward',
  bindings: BACKWARD_BINDINGS,
  uniforms: { var: 'params', struct: 'Params', fields: { B: 'u32', T: 'u32', maxBlocksPerSeq: 'u32', scale: 'f32', window: 'u32' } },
  entryPoints: { delta: ['stats', 'dout', 'out'], dq: GRADS, dkv: GRADS },
  shaders: { tiled: [ATTENTION_COMMON_WGSL, commonWgsl, tiledCode], naive: [ATTENTION_COMMON_WGSL, commonWgsl, naiveCode] },
};

interface Entry {
  layout: KernelLayout;
  pipeline: GPUComputePipeline;
}

export class AttentionBackward {
  readonly variant: 'tiled' | 'naive';
  readonly tiling: AttentionBackwardTiling;
  private readonly entries: { delta: Entry; dq: Entry; dkv: Entry };

  constructor(
    private readonly ctx: KernelContext,
    readonly shape: AttentionShape,
    opts: AttentionBackwardOptions = {},
  ) {
    const { NH, NKV, HS } = shape;
    if (NH % NKV !== 0) throw new Error(`AttentionBackward: ${NH} heads are not a multiple of ${NKV} kv heads`);
    if (HS % 4 !== 0 || HS > MAX_HS) throw new Error(`AttentionBackward: head dim ${HS} must be a multiple of 4 and <= ${MAX_HS}`);
    this.variant = opts.variant ?? 'tiled';
    this.tiling = attentionBackwardTiling(
      HS,
      workgroupStorageBudget(ctx, opts.workgroupStorageBytes),
      opts.maxTile ?? (ctx.softwareAdapter ? 4 : 16),
    );
    const { workgroupSize: WG, lanes, keysPerTile: BK, queriesPerTile: BQ } = this.tiling;
    const base = { HS, NKV, G: NH / NKV };
    const consts =
      this.variant === 'tiled'
        ? {
            ...base,
            WG,
            LANES: lanes,
            DPT4: HS / 4 / lanes,
            BK,
            BQ,
            PART_K: lanes > 1 ? BK * WG : 1,
            PART_Q: lanes > 1 ? BQ * WG : 1,
          }
        : base;
    const spec = ATTENTION_BACKWARD_SPEC;
    const code = composeShader({ spec, consts, body: spec.shaders[this.variant] });
    const entry = (entryPoint: 'delta' | 'dq' | 'dkv'): Entry => {
      const label = `attention-backward.${this.variant}.${entryPoint}`;
      const layout = specLayout(ctx, spec, entryPoint);
      return { layout, pipeline: ctx.pipelines.get({ label, code, entryPoint, layout: layout.pipeline, constants: { KV_BLOCK } }) };
    };
    this.entries = { delta: entry('delta'), dq: entry('dq'), dkv: entry('dkv') };
  }

  /** The three dispatches (delta, dq, dk/dv), to record in this order after the forward's. */
  encode(io: AttentionBackwardIO, dims: AttentionBackwardDims): KernelCall[] {
    const { NH, NKV, HS } = this.shape;
    const { B, T, maxCount } = dims;
    const label = `attention-backward.${this.variant}`;
    for (const [name, v] of Object.entries(dims)) checkDim(label, name, v, name === 'window' ? 0 : 1);
    if (maxCount > T) throw new Error(`${label}: the longest row (${maxCount}) exceeds the batch's ${T} tokens`);
    checkElements(label, 'dqkv', io.dqkv, T * (NH + 2 * NKV) * HS);
    checkElements(label, 'stats', io.stats, 2 * T * NH);
    checkElements(label, 'dout', io.dout, T * NH * HS);
    checkElements(label, 'out', io.out, T * NH * HS);
    checkElements(label, 'q', io.q, T * NH * HS);
    checkElements(label, 'rows', io.rows, B * 4);
    const uniforms = { B, T, maxBlocksPerSeq: dims.maxBlocksPerSeq, scale: 1 / Math.sqrt(HS), window: dims.window ?? 0 };
    const G = NH / NKV;
    const R = this.tiling.rowsPerTile;
    const tiled = this.variant === 'tiled';
    return [
      this.call(`${label}.delta`, this.entries.delta, io, uniforms, grid2d(this.ctx, Math.ceil((T * NH) / 64))),
      this.call(
        `${label}.dq`,
        this.entries.dq,
        io,
        uniforms,
        tiled ? [Math.ceil((maxCount * G) / R), NKV, B] : grid2d(this.ctx, Math.ceil((T * NH) / 64)),
      ),
      this.call(
        `${label}.dkv`,
        this.entries.dkv,
        io,
        uniforms,
        tiled ? [Math.ceil(maxCount / R), NKV, B] : grid2d(this.ctx, Math.ceil((T * NKV) / 64)),
      ),
    ];
  }

  private call(
    label: string,
    e: Entry,
    io: AttentionBackwardIO,
    uniforms: UniformValues,
    workgroups: [number, number, number],
  ): KernelCall {
    const { dqkv, stats, dout, out, q, k, v, blockTable, rows } = io;
    const buffers = { dqkv, stats, dout, out, q, k, v, blockTable, rows };
    return specCall(this.ctx, ATTENTION_BACKWARD_SPEC, { label, pipeline: e.pipeline, layout: e.layout, buffers, uniforms, workgroups });
  }
}
