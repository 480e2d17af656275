/**
 * AddInto: out[outOffset + i] += inp[inOffset + i] for n elements (add.wgsl): a residual connection
 * where no GEMM epilogue can do it. Reference: reference/residual.ts.
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, SpecKernel } from './spec-kernel';
import code from './add.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const ADD_SPEC: KernelSpec = {
  name: 'add',
  bindings: {
    inp: ro('IN', 'f32', 'n values from in_off'),
    out: rw('OUT', 'f32', 'n values from out_off, accumulated into'),
  },
  uniforms: params('n out_off in_off'),
  shaders: { main: [code] },
};

export interface AddArgs {
  /** f32, n elements from outOffset, accumulated into. */
  out: BufferRef;
  /** f32, n elements from inOffset. */
  inp: BufferRef;
  n: number;
  outOffset?: number;
  inOffset?: number;
}

export class AddInto extends SpecKernel.of(ADD_SPEC) {
  encode({ out, inp, n, outOffset = 0, inOffset = 0 }: AddArgs): KernelCall[] {
    checkDim('add', 'n', n);
    checkElements('add', 'out', out, outOffset + n);
    checkElements('add', 'inp', inp, inOffset + n);
    return [
      this.call({
        pipeline: this.pipeline(),
        buffers: { inp, out },
        uniforms: { n, out_off: outOffset, in_off: inOffset },
        workgroups: grid(this.ctx, Math.ceil(n / 256)),
      }),
    ];
  }
}
