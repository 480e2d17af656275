/**
 * CrossEntropy: the trainer's fused log-softmax over the vocabulary (cross-entropy.wgsl). For a
 * chunk of logits rows (the head runs a few hundred rows at a time so the logits of a whole
 * sequence never exist at once): each row's target logprob and entropy, and, with coefficients,
 * the logits backward dlogits = c (softmax - onehot) written over the logits in place, ready for
 * the dX GEMM through the embedding.
 *
 * GPUs: one workgroup of 256 per row; the merge of the invocations' online softmax states is a fixed
 * tree in workgroup memory, so results do not depend on the adapter's subgroup size. Software
 * adapters (`serial` entry point): one invocation per row, no workgroup memory, no barrier: there
 * every invocation pays for those (52 rows of a 211-token vocabulary on SwiftShader: 227 ms with
 * 256-wide rows, 95 ms with 32-wide, a few ms serial).
 * Reference: reference/cross-entropy.ts.
 */
import type { KernelContext } from '../gpu/context';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { makeCall, packUniforms } from '../gpu/kernel-call';
import { checkDim, checkElements, grid, kernelLayout, placeholder } from './common';
import code from './cross-entropy.wgsl?raw';
import { composeShader } from './shader';

/** Target id of a row that predicts nothing (the last position of a sequence). */
export const NO_TARGET = 0xffffffff;

export interface CrossEntropyArgs {
  /** f32 [R, ld] logits of this chunk; overwritten by dlogits when `coef` is given. */
  logits: BufferRef;
  ld?: number;
  R: number;
  V: number;
  /** u32 [rows]: target token of each row (NO_TARGET for none); the chunk's rows start at row0. */
  targets: BufferRef;
  row0: number;
  /** f32 [rows]: the loss coefficient c of each row; absent: forward only. */
  coef?: BufferRef;
  /** f32: logprob of row i at lpOffset + row0 + i, entropy at entOffset + row0 + i. */
  stats: BufferRef;
  lpOffset: number;
  entOffset: number;
}


export class CrossEntropy {
  private readonly layout;

  private readonly serial: boolean;

  constructor(private readonly ctx: KernelContext) {
    this.serial = ctx.softwareAdapter;
    this.layout = kernelLayout(ctx, 'cross-entropy', [
      'storage', // 0 logits [R, ld], dlogits written in place with GRAD
      'read-only-storage', // 1 targets u32 [rows]
      'read-only-storage', // 2 coefficients f32 [rows] (GRAD)
      'storage', // 3 stats: logprobs and entropies
      'uniform', // 4 R, V, ld, row0, lpOffset, entOffset
    ]);
  }

  encode(a: CrossEntropyArgs): KernelCall {
    const label = a.coef ? 'cross-entropy.grad' : 'cross-entropy';
    checkDim(label, 'R', a.R);
    checkDim(label, 'V', a.V);
    const ld = a.ld ?? a.V;
    if (ld < a.V) throw new Error(`${label}: row stride ${ld} < V ${a.V}`);
    checkElements(label, 'logits', a.logits, (a.R - 1) * ld + a.V);
    checkElements(label, 'targets', a.targets, a.row0 + a.R);
    if (a.coef) checkElements(label, 'coef', a.coef, a.row0 + a.R);
    checkElements(label, 'stats', a.stats, Math.max(a.lpOffset, a.entOffset) + a.row0 + a.R);
    const pipeline = this.ctx.pipelines.get({
      label,
      layout: this.layout.pipeline,
      entryPoint: this.serial ? 'serial' : 'main',
      code: composeShader({ consts: { WG: this.serial ? 64 : 256, GRAD: !!a.coef }, body: [code] }),
    });
    return makeCall(this.ctx, {
      label,
      pipeline,
      layout: this.layout.bindGroup,
      buffers: [a.logits, a.targets, a.coef ?? placeholder(this.ctx), a.stats],
      uniforms: packUniforms([a.R, a.V, ld, a.row0, a.lpOffset, a.entOffset]),
      workgroups: grid(this.ctx, this.serial ? Math.ceil(a.R / 64) : a.R),
    });
  }
}
