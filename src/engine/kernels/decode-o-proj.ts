/**
 * DecodeOProj: fused decode step 3 (decode-o-proj.wgsl): merges the decode-attention partials
 * (log-sum-exp over the splits, docs/engine.md layout) while staging them as the GEMV input, o_proj
 * GEMV, and residual += pending MLP partials (this workgroup's columns only: each element is folded
 * exactly once across the grid) + output (+ bias). With sandwich norms (Gemma) the output goes to the
 * stream's `branch` block instead, pending 0: DecodeMlp normalises it and adds it to the residual.
 *
 * Every workgroup merges the whole [B, NH, S, HS + 2] partials of its batch rows: S times the bytes of
 * a plain activation load. Worth a dispatch saved while S is small (short and medium contexts at
 * small batch); with many splits use AttentionMerge + Gemv(accumulate) instead (`fits` says which):
 * docs/engine.md "Decode step". Not here: producing the partials (attention-decode.ts).
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, checkElements, SpecKernel } from './spec-kernel';
import code from './decode-o-proj.wgsl?raw';
import merge from './decode-merge.wgsl?raw';
import type { DecodeShape, DecodeStream } from './decode-stream';
import core from './gemv-core.wgsl?raw';
import type { GemvTile } from './gemv-config';
import { fitTile, tileConsts } from './gemv-config';
import { pow2floor } from './shader';
import loraExpand from './decode-lora-expand.wgsl?raw';
import { loraBuffers, loraExpandConsts, loraExpandUniforms, loraVariant, withLoraFields, type DecodeLoraRefs } from './decode-lora';
import { wgslSection } from './shader';
import { packed, ro, rw, type KernelSpec } from './spec';

export const DECODE_O_PROJ_SPEC: KernelSpec = {
  name: 'decode.o_proj',
  bindings: {
    partials: ro('AP', 'f32', 'attention partials [B, NH, S, HS + 2]'),
    o: packed('W', 'Wo packed [C, NH HS], row stride w_stride'),
    vectors: ro('VEC', 'f32', 'o_proj bias at bias_off'),
    stream: rw('STREAM', 'f32', '[1 + P (+ mid, branch), bcap, C]: residual (updated), MLP partials'),
  },
  // C outputs (hidden size), K = NH * HS, S splits, bcap rows of each stream block, pending MLP partial
  // sums, out_block: the `branch` block (sandwich norms)
  uniforms: withLoraFields('B C K NH HS S bcap pending w_stride bias_off out_block'),
  shaders: { main: [core, merge, wgslSection(code, 'lora', false)] },
};

/** DecodeOProj with each row's LoRA o term (decode-lora.ts). */
export const DECODE_O_PROJ_LORA_SPEC = loraVariant(DECODE_O_PROJ_SPEC, 'read', [core, merge, loraExpand, wgslSection(code, 'lora', true)]);

/** One layer's o_proj as decode.o_proj reads it: Wo, and its bias offset (floats) in the vectors buffer. */
export interface DecodeOProjWeights {
  /** Wo [C, NH HS]. */
  o: PackedMatrix;
  oBias: number | null;
}

export interface DecodeOProjArgs {
  shape: DecodeShape;
  layer: DecodeOProjWeights;
  /** f32: the bias at oBias. */
  vectors: BufferRef;
  stream: DecodeStream;
  /** MLP partial blocks still pending in the stream (0 at layer 0). */
  pending: number;
  /** f32 [B, NH, numSplits, HS + 2] from DecodeAttention. */
  partials: BufferRef;
  numSplits: number;
  B: number;
  /** Rows with adapters: add their LoRA o terms (the `lora` variant; pending must be 0). */
  lora?: DecodeLoraRefs & { layer: number };
}

export class DecodeOProj extends SpecKernel.of(DECODE_O_PROJ_SPEC) {
  private readonly coefCap: number;

  /**
   * `mergeCap`: merge weights a workgroup may hold (B x NH x splits), by default what the device's
   * workgroup memory allows; a smaller one sends shorter contexts to AttentionMerge + Gemv (tests).
   */
  constructor(ctx: KernelContext, opts: { mergeCap?: number } = {}) {
    super(ctx);
    const most = ctx.maxWorkgroupStorage >= 32 * 1024 ? 2048 : 1024;
    this.coefCap = Math.min(most, opts.mergeCap ?? most);
  }

  private tile(NH: number, HS: number, B: number, S: number): GemvTile | null {
    if (NH * S > this.coefCap) return null;
    // Batch rows per workgroup are bounded by the merge weights they need (BB * NH * S <= the cap).
    const maxBB = pow2floor(Math.floor(this.coefCap / (NH * S)));
    try {
      return fitTile(this.ctx, NH * HS, Math.min(B, maxBB), () => 4 * this.coefCap, 'decode.o_proj');
    } catch {
      return null;
    }
  }

  /** Whether the fused merge handles this many splits (else: AttentionMerge + Gemv). */
  fits(shape: Pick<DecodeShape, 'NH' | 'HS'>, B: number, numSplits: number): boolean {
    return this.tile(shape.NH, shape.HS, B, numSplits) !== null;
  }

  encode(a: DecodeOProjArgs): KernelCall[] {
    const { C, NH, HS } = a.shape;
    const w = a.layer;
    checkDim('decode.o_proj', 'B', a.B);
    checkDim('decode.o_proj', 'numSplits', a.numSplits);
    if (a.B > a.stream.rows || a.stream.C !== C)
      throw new Error(`decode.o_proj: stream [${a.stream.rows} x ${a.stream.C}] for B ${a.B}, C ${C}`);
    if (a.pending > a.stream.partials)
      throw new Error(`decode.o_proj: ${a.pending} pending partials, the stream holds ${a.stream.partials}`);
    checkElements('decode.o_proj', 'partials', a.partials, a.B * NH * a.numSplits * (HS + 2));
    const tile = this.tile(NH, HS, a.B, a.numSplits);
    if (!tile) {
      throw new Error(
        `decode.o_proj: ${NH} heads x ${a.numSplits} splits exceed the merge buffer (${this.coefCap}); use AttentionMerge + Gemv`,
      );
    }
    const sandwich = a.shape.sandwich;
    if (sandwich && (a.pending > 0 || !a.stream.sandwich))
      throw new Error('decode.o_proj: with sandwich norms the partials stay pending and the stream needs a branch block');
    if (a.lora && a.pending > 0) throw new Error('decode.o_proj: LoRA rows need the residual folded first (DecodeLora)');
    const spec = a.lora ? DECODE_O_PROJ_LORA_SPEC : DECODE_O_PROJ_SPEC;
    const consts = {
      ...tileConsts(tile),
      ...loraExpandConsts(a.stream.partials),
      NORM: false,
      HAS_BIAS: w.oBias !== null,
      COEF_CAP: this.coefCap,
      SANDWICH: sandwich,
    };
    const label = `decode.o_proj.${w.o.dtype}${a.lora ? '.lora' : ''}`;
    const lora = loraBuffers(a.lora);
    return [
      this.call({
        label,
        spec,
        pipeline: this.pipeline({ label, spec, reductions: true, consts, weights: { W: w.o.dtype } }),
        buffers: { partials: a.partials, o: w.o.single('decode.o_proj'), vectors: a.vectors, stream: a.stream.buffer, ...lora },
        uniforms: {
          B: a.B,
          C,
          K: NH * HS,
          NH,
          HS,
          S: a.numSplits,
          bcap: a.stream.rows,
          pending: a.pending,
          w_stride: w.o.rowStride,
          bias_off: w.oBias ?? 0,
          out_block: sandwich ? a.stream.branchBlock : 0,
          ...loraExpandUniforms(a.lora, 'o', a.lora?.layer ?? 0),
        },
        workgroups: [Math.ceil(C / (tile.TR * tile.RPT)), Math.ceil(a.B / tile.BB), 1],
      }),
    ];
  }
}
