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
import { checkDim, checkElements, grid, placeholder, SpecKernel } from './spec-kernel';
import code from './cross-entropy.wgsl?raw';
import { params, ro, rw, type KernelSpec } from './spec';

export const CROSS_ENTROPY_SPEC: KernelSpec = {
  name: 'cross-entropy',
  bindings: {
    logits: rw('LOGITS', 'f32', '[R, ld]; dlogits written in place with GRAD'),
    targets: ro('TARGETS', 'u32', '[rows]'),
    coef: ro('COEF', 'f32', '[rows] loss coefficients (GRAD)'),
    stats: rw('STATS', 'f32', 'logprobs at lp_off, entropies at ent_off'),
  },
  // R rows in this chunk; ld the logits row stride; row0 the chunk's first row in TARGETS, COEF and
  // the outputs; row i's logprob at STATS[lp_off + row0 + i], its entropy at STATS[ent_off + row0 + i].
  uniforms: params('R V ld row0 lp_off ent_off'),
  shaders: { main: [code] },
};

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

export class CrossEntropy extends SpecKernel.of(CROSS_ENTROPY_SPEC) {
  private readonly serial: boolean;

  constructor(ctx: KernelContext) {
    super(ctx);
    this.serial = ctx.softwareAdapter;
  }

  encode(a: CrossEntropyArgs): KernelCall[] {
    const label = a.coef ? 'cross-entropy.grad' : 'cross-entropy';
    checkDim(label, 'R', a.R);
    checkDim(label, 'V', a.V);
    const ld = a.ld ?? a.V;
    if (ld < a.V) throw new Error(`${label}: row stride ${ld} < V ${a.V}`);
    checkElements(label, 'logits', a.logits, (a.R - 1) * ld + a.V);
    checkElements(label, 'targets', a.targets, a.row0 + a.R);
    if (a.coef) checkElements(label, 'coef', a.coef, a.row0 + a.R);
    checkElements(label, 'stats', a.stats, Math.max(a.lpOffset, a.entOffset) + a.row0 + a.R);
    const pipeline = this.pipeline({
      label,
      entryPoint: this.serial ? 'serial' : 'main',
      consts: { WG: this.serial ? 64 : 256, GRAD: !!a.coef },
    });
    return [
      this.call({
        label,
        pipeline,
        buffers: { logits: a.logits, targets: a.targets, coef: a.coef ?? placeholder(this.ctx), stats: a.stats },
        uniforms: { R: a.R, V: a.V, ld, row0: a.row0, lp_off: a.lpOffset, ent_off: a.entOffset },
        workgroups: grid(this.ctx, this.serial ? Math.ceil(a.R / 64) : a.R),
      }),
    ];
  }
}
