/**
 * AddInto: out[outOffset + i] += inp[inOffset + i] for n elements (add.wgsl): a residual connection
 * where no GEMM epilogue can do it. Reference: reference/residual.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout } from './common';
import code from './add.wgsl?raw';

export class AddInto {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = kernelLayout(ctx, 'add', ['read-only-storage', 'storage', 'uniform']);
  }

  encode(out: BufferRef, inp: BufferRef, n: number, outOffset = 0, inOffset = 0): KernelCall {
    checkDim('add', 'n', n);
    checkElements('add', 'out', out, outOffset + n);
    checkElements('add', 'inp', inp, inOffset + n);
    const pipeline = this.ctx.pipelines.get({ label: 'add', layout: this.layout.pipeline, entryPoint: 'main', code });
    return makeCall(this.ctx, {
      label: 'add',
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [inp, out],
      uniforms: packUniforms([n, outOffset, inOffset]),
      workgroups: grid(this.ctx, Math.ceil(n / 256)),
    });
  }
}
