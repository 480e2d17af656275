/**
 * Gemv: the decode linear layer (gemv.wgsl on gemv-core.wgsl), Y[b, n] (+)= W[n, :] . X[b, :] (+ bias)
 * for B <= 64 activation rows, W packed in its file dtype (gpu/packed-tensor.ts). Each weight row is
 * read once per group of 8 activation rows; tile sizes and why: gemv-config.ts.
 *
 * Options: an RMSNorm folded into the activation load (final norm before lm_head), bias, accumulate
 * into Y (residual add), SwiGLU over a fused [gate; up] matrix (unfused decode MLP). A weight split in
 * row chunks (lm_head over a large vocabulary, or a fused matrix whose parts differ in dtype) gives one
 * call per chunk, in the chunk's dtype, each writing its own column range of Y.
 * Not here: the fused decode layer kernels (decode-*.ts), the prefill GEMM (gemm.ts).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { PackedMatrix } from '../gpu/packed-tensor';
import type { DType } from '../tensor/dtype';
import { checkDim, checkRows, placeholder, SpecKernel } from './spec-kernel';
import core from './gemv-core.wgsl?raw';
import { gemvTile, tileConsts } from './gemv-config';
import code from './gemv.wgsl?raw';
import { packed, params, ro, rw, type KernelSpec } from './spec';

export const GEMV_SPEC: KernelSpec = {
  name: 'gemv',
  bindings: {
    weight: packed('W', 'packed weights (file dtype), row 0 at w_off, row stride w_stride'),
    x: ro('X', 'f32', 'activations: X[b, k] = X[x_off + b * x_stride + k]'),
    out: rw('Y', 'f32', 'outputs: Y[b, n] = Y[y_off + b * y_stride + n]'),
    vectors: ro('VEC', 'f32', 'f32 vectors: bias at bias_off, norm weight at norm_off'),
  },
  // N outputs (rows of W; with SWIGLU the number of gate/up pairs), K inputs (columns of W), B
  // activation rows in use; up_row: with SWIGLU the row of up_proj's row 0
  uniforms: params('N K B x_off x_stride y_off y_stride w_off w_stride bias_off norm_off up_row eps:f32'),
  shaders: { main: [core, code] },
};

export interface GemvArgs {
  /** Y, f32: element (b, n) at yOffset + b * yStride + n. */
  out: BufferRef;
  /** X, f32: element (b, k) at xOffset + b * xStride + k. */
  x: BufferRef;
  /** W [N, K] (with swiglu: [2F, K], gate rows then up rows). */
  weight: PackedMatrix;
  /** Activation rows (1..64). */
  B: number;
  xOffset?: number;
  xStride?: number;
  yOffset?: number;
  yStride?: number;
  /** f32 vectors buffer (WeightSet.vectors) holding the bias and norm weight. */
  vectors?: GPUBuffer;
  /** Element offset of the bias (N values; with swiglu 2F: gate then up) in `vectors`. */
  bias?: number | null;
  /** RMSNorm the activations first, weight at `offset` in `vectors`. */
  norm?: { offset: number; eps: number } | null;
  /** Y += result instead of Y = result. */
  accumulate?: boolean;
  /** W is [gate; up]: Y[b, f] = silu(gate_f . x) * (up_f . x), N = F = weight.rows / 2. */
  swiglu?: boolean;
}

export class Gemv extends SpecKernel.of(GEMV_SPEC) {
  /** One call per chunk of the weight (usually one). */
  encode(a: GemvArgs): KernelCall[] {
    const w = a.weight;
    const K = w.cols;
    const swiglu = a.swiglu ?? false;
    const N = swiglu ? w.rows / 2 : w.rows;
    checkDim('gemv', 'B', a.B);
    if (a.B > 64) throw new Error(`gemv: B = ${a.B} activation rows; use the GEMM beyond 64`);
    if (swiglu && (w.rows % 2 !== 0 || w.chunks.length !== 1)) {
      throw new Error(`gemv: swiglu needs an unsplit [gate; up] matrix, got ${w.label} with ${w.rows} rows in ${w.chunks.length} chunks`);
    }
    const xStride = a.xStride ?? K;
    const yStride = a.yStride ?? N;
    const xOffset = a.xOffset ?? 0;
    const yOffset = a.yOffset ?? 0;
    checkRows('gemv', 'x', a.x, a.B, K, xStride, xOffset);
    checkRows('gemv', 'out', a.out, a.B, N, yStride, yOffset);
    if ((a.bias != null || a.norm) && !a.vectors) throw new Error('gemv: bias / norm need the vectors buffer');
    const tile = gemvTile(this.ctx, K, a.B);
    const flags = { NORM: !!a.norm, HAS_BIAS: a.bias != null, ACCUM: a.accumulate ?? false, SWIGLU: swiglu };
    const pipelineOf = (dtype: DType) => {
      const label = `gemv.${dtype}${flags.NORM ? '.norm' : ''}${flags.SWIGLU ? '.swiglu' : ''}${flags.ACCUM ? '.accum' : ''}`;
      return {
        label,
        pipeline: this.pipeline({ label, reductions: true, consts: { ...tileConsts(tile), ...flags }, weights: { W: dtype } }),
      };
    };
    const G = tile.TR * tile.RPT;
    const outsPerGroup = swiglu ? G / 2 : G;
    return w.chunks.map((chunk) => {
      // Chunk c of W holds output rows [rowStart, rowStart + rows): it writes that column range of Y.
      return this.call({
        ...pipelineOf(chunk.dtype),
        buffers: { weight: chunk.buffer, x: a.x, out: a.out, vectors: a.vectors ?? placeholder(this.ctx) },
        uniforms: {
          N: swiglu ? N : chunk.rows,
          K,
          B: a.B,
          x_off: xOffset,
          x_stride: xStride,
          y_off: yOffset + chunk.rowStart,
          y_stride: yStride,
          w_off: 0,
          w_stride: chunk.rowStride,
          bias_off: (a.bias ?? 0) + chunk.rowStart,
          norm_off: a.norm?.offset ?? 0,
          up_row: swiglu ? N : 0,
          eps: a.norm?.eps ?? 0,
        },
        workgroups: [Math.ceil((swiglu ? N : chunk.rows) / outsPerGroup), Math.ceil(a.B / tile.BB), 1],
      });
    });
  }

  /** Encodes and records into `pass`; returns the calls (dispose them after submission). */
  record(pass: GPUComputePassEncoder, a: GemvArgs): KernelCall[] {
    const calls = this.encode(a);
    for (const c of calls) c.record(pass, this.ctx);
    return calls;
  }
}
