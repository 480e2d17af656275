/**
 * DecodeMlp: fused decode step 4 (decode-mlp.wgsl): post-attention RMSNorm, gate and up rows of an
 * F-slice, silu(gate) * up (or Gemma's gelu_tanh(gate) * up), and the slice's down_proj product written
 * as a partial sum (split-K over F: deterministic, no float atomics). The next layer's DecodeQkv /
 * DecodeOProj, or DecodeFinalize, add the partials into the residual. With sandwich norms (Gemma) it
 * first adds o_proj's normalised output (the stream's `branch` block) to the residual it stages, and
 * writes that residual to the `mid` block (decode-stream.ts).
 *
 * Slice width FS (a multiple of 8): the number of partials P = ceil(F / FS) is both this kernel's
 * workgroup count at batch 1 and the number of C-vectors every DecodeQkv workgroup adds while staging,
 * so it trades occupancy here against L2 traffic there. The default FS = 128 gives P = 12 (SmolLM2),
 * 24 (Qwen3-0.6B), 38 (Qwen2.5-0.5B), 64 (Llama-3.2-1B); see docs/engine.md "Decode step".
 * Not here: the unfused alternative (Gemv with swiglu, then Gemv accumulating into the residual).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import { checkDim, SpecKernel } from './spec-kernel';
import code from './decode-mlp.wgsl?raw';
import type { DecodeShape, DecodeStream } from './decode-stream';
import core from './gemv-core.wgsl?raw';
import geluTanh from './gelu-tanh.wgsl?raw';
import branchNorm from './decode-branch-norm.wgsl?raw';
import { fitTile, tileConsts } from './gemv-config';
import loraExpand from './decode-lora-expand.wgsl?raw';
import { loraBuffers, loraExpandConsts, loraExpandUniforms, loraVariant, withLoraFields, type DecodeLoraRefs } from './decode-lora';
import { wgslSection } from './shader';
import { packed, ro, rw, type KernelSpec } from './spec';

export const DECODE_MLP_SPEC: KernelSpec = {
  name: 'decode.mlp',
  bindings: {
    stream: rw('STREAM', 'f32', '[1 + P (+ mid, branch), bcap, C]: residual (read), partials (written)'),
    gateUp: packed('W', '[gate; up] packed [2F, C], row stride w_stride'),
    down: packed('WD', 'down packed [C, F], row stride d_stride'),
    vectors: ro('VEC', 'f32', 'norm weight at norm_off, biases at gu_bias_off, d_bias_off'),
  },
  // bcap: rows of each block of the stream buffer; sandwich norms: attn_norm_off the post-attention
  // norm of o_proj's output (branch_block), mid_block the residual written
  // lora_down_a: the down module's A units (the `lora` variant's down shrink)
  uniforms: withLoraFields(
    'B C F bcap w_stride d_stride norm_off gu_bias_off d_bias_off eps:f32 attn_norm_off branch_block mid_block lora_down_a',
  ),
  shaders: { main: [core, geluTanh, branchNorm, wgslSection(code, 'lora', false)] },
};

/** DecodeMlp with each row's LoRA gate|up term and its slice's share of the down shrink (decode-lora.ts). */
export const DECODE_MLP_LORA_SPEC = loraVariant(DECODE_MLP_SPEC, 'read_write', [
  core,
  geluTanh,
  branchNorm,
  loraExpand,
  wgslSection(code, 'lora', true),
]);

export const DEFAULT_MLP_SLICE = 128;

/** Slice width and partial count for an intermediate size F. */
export function mlpSlices(F: number, slice = DEFAULT_MLP_SLICE): { FS: number; P: number } {
  if (slice % 8 !== 0 || slice < 8) throw new Error(`decode.mlp: slice width ${slice} is not a positive multiple of 8`);
  const FS = Math.min(slice, Math.ceil(F / 8) * 8);
  return { FS, P: Math.ceil(F / FS) };
}

/** One layer's MLP weights as decode.mlp reads them, and offsets (floats) into the vectors buffer. */
export interface DecodeMlpWeights {
  /** [gate; up] [2F, C]. */
  gateUp: PackedMatrix;
  /** down [C, F]. */
  down: PackedMatrix;
  postNorm: number;
  /** post_attention_layernorm on o_proj's output (sandwich norms). */
  attnOutNorm: number | null;
  gateUpBias: number | null;
  downBias: number | null;
}

export interface DecodeMlpArgs {
  shape: DecodeShape;
  layer: DecodeMlpWeights;
  /** f32: the norm weight and biases at the layer's offsets. */
  vectors: BufferRef;
  stream: DecodeStream;
  B: number;
  /** Slice width (default DEFAULT_MLP_SLICE); the stream must hold mlpSlices(F, slice).P partials. */
  slice?: number;
  /** Rows with adapters: add their LoRA gate|up terms and write the down shrink's partials (the `lora` variant). */
  lora?: DecodeLoraRefs & { layer: number };
}

export class DecodeMlp extends SpecKernel.of(DECODE_MLP_SPEC) {
  encode(a: DecodeMlpArgs): KernelCall[] {
    const { C, F } = a.shape;
    const w = a.layer;
    checkDim('decode.mlp', 'B', a.B);
    const { FS, P } = mlpSlices(F, a.slice);
    if (a.B > a.stream.rows || a.stream.C !== C)
      throw new Error(`decode.mlp: stream [${a.stream.rows} x ${a.stream.C}] for B ${a.B}, C ${C}`);
    if (a.stream.partials < P)
      throw new Error(`decode.mlp: ${P} slices of ${FS} need ${P} partial blocks, the stream holds ${a.stream.partials}`);
    const tile = fitTile(this.ctx, C, a.B, (BB) => 4 * 3 * FS * BB, 'decode.mlp');
    const sandwich = a.shape.sandwich;
    if (sandwich && (!a.stream.sandwich || w.attnOutNorm === null))
      throw new Error('decode.mlp: sandwich norms need the post-attention norm and a stream with mid and branch blocks');
    // DecodeLora's fold and the down-shrink rows assume exactly the stream's P partials.
    if (a.lora && P !== a.stream.partials)
      throw new Error(`decode.mlp: LoRA rows need the stream's ${a.stream.partials} slices, not ${P} (DecodeLora folds them)`);
    const spec = a.lora ? DECODE_MLP_LORA_SPEC : DECODE_MLP_SPEC;
    const consts = {
      ...tileConsts(tile),
      ...loraExpandConsts(a.stream.partials),
      NORM: true,
      FS,
      HAS_BIAS: w.gateUpBias !== null,
      GELU: a.shape.act === 'gelu_tanh',
      SANDWICH: sandwich,
    };
    const label = `decode.mlp.${w.gateUp.dtype}${a.lora ? '.lora' : ''}`;
    const lora = loraBuffers(a.lora);
    const down = a.lora ? a.lora.layout.groups.down.map((m) => a.lora!.layout.modules[m]) : [];
    return [
      this.call({
        label,
        spec,
        pipeline: this.pipeline({ label, spec, reductions: true, consts, weights: { W: w.gateUp.dtype, WD: w.down.dtype } }),
        buffers: {
          ...lora,
          stream: a.stream.buffer,
          gateUp: w.gateUp.single('decode.mlp'),
          down: w.down.single('decode.mlp'),
          vectors: a.vectors,
        },
        uniforms: {
          B: a.B,
          C,
          F,
          bcap: a.stream.rows,
          w_stride: w.gateUp.rowStride,
          d_stride: w.down.rowStride,
          norm_off: w.postNorm,
          gu_bias_off: w.gateUpBias ?? 0,
          d_bias_off: w.downBias ?? 0,
          eps: a.shape.eps,
          attn_norm_off: w.attnOutNorm ?? 0,
          branch_block: sandwich ? a.stream.branchBlock : 0,
          mid_block: sandwich ? a.stream.midBlock : 0,
          lora_down_a: down[0]?.aUnits ?? 0,
          ...loraExpandUniforms(a.lora, 'gateUp', a.lora?.layer ?? 0),
        },
        workgroups: [P, Math.ceil(a.B / tile.BB), 1],
      }),
    ];
  }
}
