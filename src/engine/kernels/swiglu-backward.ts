/**
 * SwiGluBackward: the MLP activation's backward (swiglu-backward.wgsl), from d(silu(gate) * up)
 * [T, F] and the saved fused [gate | up] GEMM output [T, 2F] to d[gate | up] [T, 2F] in the same
 * fused layout, ready for one dX GEMM through the fused gate_up weight. Elementwise.
 * Gemma's GeGLU (gelu_tanh(gate) * up) with `act`. Reference: reference/swiglu.ts `swigluBackward`,
 * `mlpActivationBackward`.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import activation from './activation.wgsl?raw';
import geluTanh from './gelu-tanh.wgsl?raw';
import { checkDim, checkRows, grid, SpecKernel } from './spec-kernel';
import { params, ro, rw, type KernelSpec } from './spec';
import code from './swiglu-backward.wgsl?raw';
import type { MlpActivation } from './swiglu';

export const SWIGLU_BACKWARD_SPEC: KernelSpec = {
  name: 'swiglu-backward',
  bindings: {
    dact: ro('DACT', 'f32', '[T, F] gradient of silu(g) * u, row stride d_stride'),
    gateUp: ro('GU', 'f32', '[T, 2F] saved gate | up, row stride in_stride'),
    dgateUp: rw('DGU', 'f32', '[T, 2F] d gate | d up, row stride dgu_stride'),
  },
  uniforms: params('T F in_stride d_stride dgu_stride'),
  shaders: { main: [geluTanh, activation, code] },
};

export interface SwiGluBackwardArgs {
  /** f32 [T, 2F] (row stride dgateUpStride), written: d gate in columns 0..F-1, d up in F..2F-1. */
  dgateUp: BufferRef;
  /** f32 [T, F] (row stride dactStride): gradient of the activation output. */
  dact: BufferRef;
  /** f32 [T, 2F] (row stride gateUpStride): the forward's fused gate | up output. */
  gateUp: BufferRef;
  T: number;
  F: number;
  gateUpStride?: number;
  dactStride?: number;
  dgateUpStride?: number;
  /** The gate's activation (default silu; Gemma: gelu_tanh). */
  act?: MlpActivation;
}

export class SwiGluBackward extends SpecKernel.of(SWIGLU_BACKWARD_SPEC) {
  encode(a: SwiGluBackwardArgs): KernelCall[] {
    const act = a.act ?? 'silu';
    const label = `swiglu-backward.${act}`;
    checkDim(label, 'T', a.T);
    checkDim(label, 'F', a.F);
    const guStride = a.gateUpStride ?? 2 * a.F;
    const dStride = a.dactStride ?? a.F;
    const dguStride = a.dgateUpStride ?? 2 * a.F;
    checkRows(label, 'gateUp', a.gateUp, a.T, 2 * a.F, guStride);
    checkRows(label, 'dact', a.dact, a.T, a.F, dStride);
    checkRows(label, 'dgateUp', a.dgateUp, a.T, 2 * a.F, dguStride);
    return [
      this.call({
        pipeline: this.pipeline({ label, consts: { GELU: act === 'gelu_tanh' } }),
        buffers: { dact: a.dact, gateUp: a.gateUp, dgateUp: a.dgateUp },
        uniforms: { T: a.T, F: a.F, in_stride: guStride, d_stride: dStride, dgu_stride: dguStride },
        workgroups: grid(this.ctx, Math.ceil((a.T * a.F) / 256)),
      }),
    ];
  }
}
