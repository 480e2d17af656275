/**
 * DecodeMlp: fused decode step 4 (decode-mlp.wgsl): post-attention RMSNorm, gate and up rows of an
 * F-slice, silu(gate) * up, and the slice's down_proj product written as a partial sum (split-K over
 * F: deterministic, no float atomics). The next layer's DecodeQkv / DecodeOProj, or DecodeFinalize,
 * add the partials into the residual.
 *
 * Slice width FS (a multiple of 8): the number of partials P = ceil(F / FS) is both this kernel's
 * workgroup count at batch 1 and the number of C-vectors every DecodeQkv workgroup adds while staging,
 * so it trades occupancy here against L2 traffic there. The default FS = 128 gives P = 12 (SmolLM2),
 * 24 (Qwen3-0.6B), 38 (Qwen2.5-0.5B), 64 (Llama-3.2-1B); see docs/engine.md "Decode step".
 * Not here: the unfused alternative (Gemv with swiglu, then Gemv accumulating into the residual).
 */
import type { KernelContext } from '../gpu/context';
import type { KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import type { WeightSet } from '../model/weights';
import { checkDim, kernelLayout, subgroupsOf } from './common';
import code from './decode-mlp.wgsl?raw';
import type { DecodeStream } from './decode-stream';
import core from './gemv-core.wgsl?raw';
import { fitTile, tileConsts } from './gemv-config';
import { composeShader } from './shader';

export const DEFAULT_MLP_SLICE = 128;

/** Slice width and partial count for an intermediate size F. */
export function mlpSlices(F: number, slice = DEFAULT_MLP_SLICE): { FS: number; P: number } {
  if (slice % 8 !== 0 || slice < 8) throw new Error(`decode.mlp: slice width ${slice} is not a positive multiple of 8`);
  const FS = Math.min(slice, Math.ceil(F / 8) * 8);
  return { FS, P: Math.ceil(F / FS) };
}

export interface DecodeMlpArgs {
  weights: WeightSet;
  layer: number;
  stream: DecodeStream;
  B: number;
  /** Slice width (default DEFAULT_MLP_SLICE); the stream must hold mlpSlices(F, slice).P partials. */
  slice?: number;
}

export class DecodeMlp {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'decode.mlp', [
      'storage', // stream: residual (read), partials (written)
      'read-only-storage', // [gate; up] packed
      'read-only-storage', // down packed
      'read-only-storage', // vectors: norm weight, biases
      'uniform',
    ]);
  }

  encode(a: DecodeMlpArgs): KernelCall {
    const cfg = a.weights.config;
    const w = a.weights.layers[a.layer];
    const C = cfg.hiddenSize;
    const F = cfg.intermediateSize;
    checkDim('decode.mlp', 'B', a.B);
    const { FS, P } = mlpSlices(F, a.slice);
    if (a.B > a.stream.rows || a.stream.C !== C) throw new Error(`decode.mlp: stream [${a.stream.rows} x ${a.stream.C}] for B ${a.B}, C ${C}`);
    if (a.stream.partials < P) throw new Error(`decode.mlp: ${P} slices of ${FS} need ${P} partial blocks, the stream holds ${a.stream.partials}`);
    const tile = fitTile(this.ctx, C, a.B, (BB) => 4 * 3 * FS * BB, 'decode.mlp');
    const consts = { ...tileConsts(tile), NORM: true, FS, HAS_BIAS: w.gateUpBias !== null };
    const label = `decode.mlp.${w.gateUp.dtype}`;
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: composeShader({
        subgroups: subgroupsOf(this.ctx),
        reductions: true,
        consts,
        weights: { W: w.gateUp.dtype, WD: w.down.dtype },
        body: [core, code],
      }),
    });
    const uniforms = packUniforms([
      a.B,
      C,
      F,
      a.stream.rows,
      w.gateUp.rowStride,
      w.down.rowStride,
      w.postNorm,
      w.gateUpBias ?? 0,
      w.downBias ?? 0,
      { f32: cfg.rmsNormEps },
    ]);
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.stream.buffer, w.gateUp.single('decode.mlp'), w.down.single('decode.mlp'), a.weights.vectors],
      uniforms,
      workgroups: [P, Math.ceil(a.B / tile.BB), 1],
    });
  }
}
