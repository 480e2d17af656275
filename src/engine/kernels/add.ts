/**
 * AddInto: out[outOffset + i] += inp[inOffset + i] for n elements (add.wgsl): a residual connection
 * where no GEMM epilogue can do it. Reference: reference/residual.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, specCall, specLayout } from './common';
import code from './add.wgsl?raw';
import { withDeclarations, type KernelSpec } from './spec';

export const ADD_SPEC: KernelSpec = {
  name: 'add',
  bindings: {
    inp: { var: 'IN', type: 'f32', access: 'read', doc: 'n values from in_off' },
    out: { var: 'OUT', type: 'f32', access: 'read_write', doc: 'n values from out_off, accumulated into' },
  },
  uniforms: { var: 'P', struct: 'Params', fields: { n: 'u32', out_off: 'u32', in_off: 'u32' } },
  shaders: { main: [code] },
};

export class AddInto {
  private readonly layout;

  constructor(private readonly ctx: KernelContext) {
    this.layout = specLayout(ctx, ADD_SPEC);
  }

  encode(out: BufferRef, inp: BufferRef, n: number, outOffset = 0, inOffset = 0): KernelCall {
    checkDim('add', 'n', n);
    checkElements('add', 'out', out, outOffset + n);
    checkElements('add', 'inp', inp, inOffset + n);
    const pipeline = this.ctx.pipelines.get({
      label: 'add',
      layout: this.layout.pipeline,
      entryPoint: 'main',
      code: withDeclarations(ADD_SPEC, code),
    });
    return specCall(this.ctx, ADD_SPEC, {
      pipeline,
      layout: this.layout,
      buffers: { inp, out },
      uniforms: { n, out_off: outOffset, in_off: inOffset },
      workgroups: grid(this.ctx, Math.ceil(n / 256)),
    });
  }
}
