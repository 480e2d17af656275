/**
 * SwiGluBackward: the MLP activation's backward (swiglu-backward.wgsl), from d(silu(gate) * up)
 * [T, F] and the saved fused [gate | up] GEMM output [T, 2F] to d[gate | up] [T, 2F] in the same
 * fused layout, ready for one dX GEMM through the fused gate_up weight. Elementwise.
 * Reference: reference/swiglu.ts `swigluBackward`.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout } from './common';
import code from './swiglu-backward.wgsl?raw';

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
}

export class SwiGluBackward {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'swiglu-backward', [
      'read-only-storage', // 0 dact [T, F]
      'read-only-storage', // 1 gate | up [T, 2F] (saved)
      'storage', // 2 d gate | d up [T, 2F]
      'uniform', // 3 params
    ]);
  }

  encode(a: SwiGluBackwardArgs): KernelCall {
    const label = 'swiglu-backward';
    checkDim(label, 'T', a.T);
    checkDim(label, 'F', a.F);
    const guStride = a.gateUpStride ?? 2 * a.F;
    const dStride = a.dactStride ?? a.F;
    const dguStride = a.dgateUpStride ?? 2 * a.F;
    checkElements(label, 'gateUp', a.gateUp, (a.T - 1) * guStride + 2 * a.F);
    checkElements(label, 'dact', a.dact, (a.T - 1) * dStride + a.F);
    checkElements(label, 'dgateUp', a.dgateUp, (a.T - 1) * dguStride + 2 * a.F);
    const pipeline = this.ctx.pipelines.get({ label, layout: this.layout.pipeline, entryPoint: 'main', code });
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.dact, a.gateUp, a.dgateUp],
      uniforms: packUniforms([a.T, a.F, guStride, dStride, dguStride]),
      workgroups: grid(this.ctx, Math.ceil((a.T * a.F) / 256)),
    });
  }
}
