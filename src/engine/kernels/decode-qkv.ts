/**
 * DecodeQkv: fused decode step 1 (decode-qkv.wgsl): residual + pending MLP partials, input RMSNorm,
 * the fused q|k|v GEMV with bias, Qwen3 / Gemma q/k-norm, RoPE (partial, or none on a NoPE layer, or
 * Gemma's local table on a sliding layer), K/V into the paged cache, q out. With sandwich norms
 * (Gemma) the partials are normalised as a whole row (post_feedforward_layernorm) before they join
 * the residual, read from the stream's `mid` block, and the sum is written to block 0 as the layer's
 * residual (decode-stream.ts).
 *
 * Work split: a workgroup owns U rows of one head for a group of batch rows. Without q/k-norm U is the
 * GEMV group (16 rows: 8 RoPE pairs), so a 64-dim head spreads over 4 workgroups and a 0.5B model's
 * 18 heads give 72 workgroups at batch 1; with q/k-norm a head's norm needs all of it, U = HS. Each
 * workgroup re-reads the residual and the pending partials (P * C floats per batch row, from L2):
 * the price of not spending a dispatch on the reduction, small next to its weight rows when P is a few
 * tens (docs/engine.md "Decode step"). A qkv whose parts differ in dtype (Q4_K q / k beside Q6_K v)
 * is one call per row segment, each over its heads in its dtype: the same weight bytes read, one more
 * dispatch per segment.
 * Not here: attention (attention-decode.ts), the prefill twin (qkv-prep.ts after the GEMM).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { BATCH_ROW, KV_BLOCK } from './kv-layout';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import code from './decode-qkv.wgsl?raw';
import type { DecodeShape, DecodeStream } from './decode-stream';
import core from './gemv-core.wgsl?raw';
import { fitTile, tileConsts } from './gemv-config';
import ropePairs from './rope-pairs.wgsl?raw';
import branchNorm from './decode-branch-norm.wgsl?raw';
import pendingSum from './decode-pending.wgsl?raw';
import loraExpand from './decode-lora-expand.wgsl?raw';
import { loraBuffers, loraExpandConsts, loraExpandUniforms, loraVariant, withLoraFields, type DecodeLoraRefs } from './decode-lora';
import { wgslSection } from './shader';
import { packed, ro, rw, type KernelSpec } from './spec';

export const DECODE_QKV_SPEC: KernelSpec = {
  name: 'decode.qkv',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P (+ mid, branch), bcap, C]: residual, MLP partials'),
    qkv: packed('W', 'Wqkv packed [(NH + 2 NKV) HS, C], row stride w_stride'),
    vectors: ro('VEC', 'f32', 'RoPE table at 0, norm weights, biases'),
    rows: ro('ROWS', BATCH_ROW, '[B]'),
    blockTable: ro('BT', 'u32', 'block table [maxSeqs, max_blocks]'),
    k: rw('KC', 'f32', "this layer's K cache"),
    v: rw('VC', 'f32', "this layer's V cache"),
    q: rw('Q', 'f32', '[B, NH, HS]'),
  },
  // bcap: rows of each stream block; pending: MLP partial sums (0 at the first layer); norm_off,
  // bias_off, qnorm_off, knorm_off: offsets in VEC; max_blocks: block-table row length;
  // rope_off: the layer's RoPE table in VEC (0, or Gemma's local one), rope_positions positions; rope:
  // 0 on a NoPE layer; head0: the first head of this call (W's first row is its first row); h_in: the
  // stream block holding the residual (0, or `mid` with sandwich norms: then h is written to block 0);
  // mlp_norm_off: the previous layer's post_feedforward_layernorm (sandwich norms)
  uniforms: withLoraFields(
    'B C NH NKV bcap pending w_stride norm_off bias_off qnorm_off knorm_off max_blocks rope_off rope_positions eps:f32 rope head0 h_in mlp_norm_off',
  ),
  shaders: { main: [core, ropePairs, pendingSum, branchNorm, wgslSection(code, 'lora', false)] },
};

/** DecodeQkv with each row's LoRA q|k|v term (decode-lora.ts). */
export const DECODE_QKV_LORA_SPEC = loraVariant(DECODE_QKV_SPEC, 'read', [
  core,
  ropePairs,
  pendingSum,
  branchNorm,
  loraExpand,
  wgslSection(code, 'lora', true),
]);

/** One layer's weights as decode.qkv reads them: Wqkv, and offsets (floats) into the vectors buffer. */
export interface DecodeQkvWeights {
  /** Wqkv [(NH + 2 NKV) HS, C]. */
  qkv: PackedMatrix;
  inputNorm: number;
  /** q, k, v biases back to back; null: none. */
  qkvBias: number | null;
  /** q_norm, k_norm [HS] (when the shape has qkNorm). */
  qNorm: number | null;
  kNorm: number | null;
}

export interface DecodeQkvArgs {
  shape: DecodeShape;
  layer: DecodeQkvWeights;
  /** f32: the RoPE table [ropePositions, rotaryDim / 2, 2] at 0, then the layer's norms and biases. */
  vectors: BufferRef;
  /** Offset (floats) of this layer's RoPE table in `vectors`: 0, or Gemma's local table on a sliding layer. */
  ropeOffset?: number;
  ropePositions: number;
  /** false on a layer without RoPE (SmolLM3 no_rope_layers). */
  rope: boolean;
  stream: DecodeStream;
  /** MLP partial blocks to add to the residual: 0 at layer 0, the slice count after. With sandwich
   * norms the residual is then read from the stream's `mid` block, and the sum written to block 0. */
  pending: number;
  /** Sandwich norms with pending partials: the previous layer's post_feedforward_layernorm (offset in `vectors`). */
  pendingNorm?: number | null;
  /** array<BatchRow> [B] (model/kv/kv-cache.ts). */
  rows: GPUBuffer;
  /** u32 [maxSeqs, maxBlocksPerSeq]. */
  blockTable: GPUBuffer;
  maxBlocksPerSeq: number;
  /** This layer's K and V cache, f32 [numBlocks, NKV, 16, HS]. */
  k: GPUBuffer;
  v: GPUBuffer;
  /** f32 [B, NH, HS], written. */
  q: BufferRef;
  B: number;
  /** Rows with adapters: add their LoRA q|k|v terms (the `lora` variant; pending must be 0). */
  lora?: DecodeLoraRefs & { layer: number };
}

/** Rows per workgroup unit: the whole head with q/k-norm, else the largest even divisor of HS <= group. */
export function qkvUnit(HS: number, qkNorm: boolean, group: number): number {
  if (qkNorm) return HS;
  for (let u = Math.min(group, HS); u >= 2; u--) if (HS % u === 0 && u % 2 === 0) return u;
  throw new Error(`decode qkv: head dim ${HS} has no even divisor`);
}

export class DecodeQkv extends SpecKernel.of(DECODE_QKV_SPEC) {
  /** Whether this device binds the `lora` variant's storage buffers (Chrome offers 10, WebGPU's default is 8). */
  loraFits(): boolean {
    return (DECODE_QKV_LORA_SPEC.minStorageLimit ?? 0) <= this.ctx.maxStorageBuffersPerStage;
  }

  /** One call per chunk of Wqkv: one, or one per row segment of a qkv whose parts differ in dtype. */
  encode(a: DecodeQkvArgs): KernelCall[] {
    const { C, NH, NKV, HS, qkNorm } = a.shape;
    const w = a.layer;
    checkDim('decode.qkv', 'B', a.B);
    if (a.B > a.stream.rows || a.stream.C !== C)
      throw new Error(`decode.qkv: stream [${a.stream.rows} x ${a.stream.C}] for B ${a.B}, C ${C}`);
    if (a.pending > a.stream.partials) throw new Error(`decode.qkv: ${a.pending} pending partials, the stream holds ${a.stream.partials}`);
    checkElements('decode.qkv', 'q', a.q, a.B * NH * HS);
    checkElements('decode.qkv', 'rows', a.rows, a.B * 4);
    // Without q/k-norm one row per invocation keeps the unit at one GEMV group of 16 rows (more,
    // smaller workgroups at batch 1); with it the unit is the head, walked in groups of 2 rows each.
    const tile = fitTile(this.ctx, C, a.B, (BB) => 4 * (HS * BB + BB), 'decode.qkv', qkNorm ? {} : { rpt: 1 });
    const U = qkvUnit(HS, qkNorm, tile.TR * tile.RPT);
    const sandwich = a.shape.sandwich;
    if (sandwich && !a.stream.sandwich) throw new Error('decode.qkv: sandwich norms need a stream with mid and branch blocks');
    if (sandwich && a.pending > 0 && (a.pendingNorm ?? null) === null)
      throw new Error("decode.qkv: sandwich norms need the previous layer's post_feedforward_layernorm");
    if (a.lora && a.pending > 0) throw new Error('decode.qkv: LoRA rows need the residual folded first (DecodeLora)');
    const spec = a.lora ? DECODE_QKV_LORA_SPEC : DECODE_QKV_SPEC;
    const consts = {
      ...tileConsts(tile),
      ...loraExpandConsts(a.stream.partials),
      NORM: true,
      U,
      HS,
      ROT: a.shape.rotaryDim,
      QK_NORM: qkNorm,
      HAS_BIAS: w.qkvBias !== null,
      SANDWICH: sandwich,
    };
    if (w.qkv.chunks.length > 1 && w.qkv.chunks.some((c) => c.rowStart % HS !== 0 || c.rows % HS !== 0)) {
      // Chunks of one dtype split by the binding limit fall mid-head; the parts of a fused qkv never do.
      w.qkv.single('decode.qkv');
    }
    return w.qkv.chunks.map((chunk) => {
      const label = `decode.qkv.${chunk.dtype}${a.lora ? '.lora' : ''}`;
      const lora = loraBuffers(a.lora);
      return this.call({
        label,
        spec,
        pipeline: this.pipeline({ label, spec, reductions: true, consts, overrides: { KV_BLOCK }, weights: { W: chunk.dtype } }),
        buffers: {
          ...lora,
          stream: a.stream.buffer,
          qkv: chunk.buffer,
          vectors: a.vectors,
          rows: a.rows,
          blockTable: a.blockTable,
          k: a.k,
          v: a.v,
          q: a.q,
        },
        uniforms: {
          B: a.B,
          C,
          NH,
          NKV,
          bcap: a.stream.rows,
          pending: a.pending,
          w_stride: chunk.rowStride,
          norm_off: w.inputNorm,
          bias_off: w.qkvBias ?? 0,
          qnorm_off: w.qNorm ?? 0,
          knorm_off: w.kNorm ?? 0,
          max_blocks: a.maxBlocksPerSeq,
          rope_off: a.ropeOffset ?? 0,
          rope_positions: a.ropePositions,
          eps: a.shape.eps,
          rope: a.rope ? 1 : 0,
          head0: chunk.rowStart / HS,
          h_in: sandwich && a.pending > 0 ? a.stream.midBlock : 0,
          mlp_norm_off: a.pendingNorm ?? 0,
          ...loraExpandUniforms(a.lora, 'qkv', a.lora?.layer ?? 0),
        },
        workgroups: [(chunk.rows / HS) * (HS / U), Math.ceil(a.B / tile.BB), 1],
      });
    });
  }
}
