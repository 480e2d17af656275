/**
 * LoraGrad: the LoRA weight gradients of the trainer's backward (lora-grad.wgsl), OUT += alpha X^T Y
 * over the token axis for several small problems in one dispatch, split-K with a deterministic
 * reduction: the partial sums of each split go to a scratch buffer and `reduce` adds them in split
 * order (WGSL has no float atomics, and atomics would make the sum order, and so the trained
 * adapter, differ from run to run).
 *
 * Why not the Gemm: these products are [r, in] or [out, r] with K = every token of the
 * micro-batch (thousands): a 64 x 64 output tile would leave r = 16 three-quarters empty, and the
 * few output tiles alone cannot fill a GPU, so the token axis is split over workgroups instead.
 * Problems of one dispatch share the X and Y bindings (offsets and strides are per problem).
 * Reference: reference/linear.ts `matmulForward` with transA (dB = s g^T u, dA = s (g B)^T x).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import { alignTo } from '../gpu/buffers';
import { checkDim, checkElements, checkRows, grid, SpecKernel } from './spec-kernel';
import code from './lora-grad.wgsl?raw';
import { ro, rw, type KernelSpec } from './spec';

export interface LoraGradProblem {
  /** OUT is M x N (before an optional transposed store); K tokens. */
  M: number;
  N: number;
  K: number;
  /** X(t, m) = x[xOffset + t * ldx + m]. */
  xOffset: number;
  ldx: number;
  /** Y(t, n) = y[yOffset + t * ldy + n]. */
  yOffset: number;
  ldy: number;
  /** OUT(m, n) at outOffset + m * ldo + n, or outOffset + n * ldo + m when transposed. */
  outOffset: number;
  ldo: number;
  transposed: boolean;
  alpha: number;
}

export interface LoraGradArgs {
  x: BufferRef;
  y: BufferRef;
  /** f32 gradients, accumulated into. */
  out: BufferRef;
  /** f32 scratch for split partials: at least `LoraGrad.partFloats(problems)` floats. */
  part: BufferRef;
  problems: LoraGradProblem[];
}

const BM = 16;
const BN = 64;
const BK = 32;
/** Problems per dispatch (the uniform block's array length). */
const MAXP = 8;
/** Workgroups a problem aims for: a few per SM on large GPUs (so K is split), one split on tiny K. */
const TARGET_WORKGROUPS = 256;

export const LORA_GRAD_SPEC: KernelSpec = {
  name: 'lora-grad',
  bindings: {
    x: ro('X', 'f32', '[K, ldx]: u (for dB^T) or s g B (for dA)'),
    y: ro('Y', 'f32', '[K, ldy]: g (for dB^T) or the module input x (for dA)'),
    out: rw('OUT', 'f32', 'the gradient buffer, accumulated'),
    part: rw('PART', 'f32', 'split partials: PART[part_off + (split M + m) N + n]'),
  },
  uniforms: {
    var: 'P',
    struct: 'Params',
    // total: workgroups (partial) or elements (reduce) in all. A problem's transposed = 1 stores
    // OUT[out_off + n ldo + m], else OUT[out_off + m ldo + n]; kps: tokens per split; first: its first
    // workgroup (partial) or element (reduce).
    fields: {
      count: 'u32',
      total: 'u32',
      _pad0: 'u32',
      _pad1: 'u32',
      problems: {
        length: MAXP,
        lengthConst: 'MAXP',
        array: {
          name: 'Problem',
          fields: {
            M: 'u32',
            N: 'u32',
            K: 'u32',
            x_off: 'u32',
            ldx: 'u32',
            y_off: 'u32',
            ldy: 'u32',
            out_off: 'u32',
            ldo: 'u32',
            transposed: 'u32',
            kps: 'u32',
            splits: 'u32',
            part_off: 'u32',
            first: 'u32',
            alpha: 'f32',
            _pad: 'u32',
          },
        },
      },
    },
  },
  shaders: { main: [code] },
};

interface Planned extends LoraGradProblem {
  splits: number;
  kps: number;
  tiles: number;
}

function plan(p: LoraGradProblem): Planned {
  const tiles = Math.ceil(p.M / BM) * Math.ceil(p.N / BN);
  const maxSplits = Math.ceil(p.K / BK);
  let splits = Math.max(1, Math.min(maxSplits, Math.ceil(TARGET_WORKGROUPS / tiles)));
  const kps = alignTo(Math.ceil(p.K / splits), BK);
  splits = Math.ceil(p.K / kps);
  return { ...p, splits, kps, tiles };
}

export class LoraGrad extends SpecKernel.of(LORA_GRAD_SPEC) {
  /** Scratch floats the split partials of these problems need. */
  static partFloats(problems: LoraGradProblem[]): number {
    let total = 0;
    for (const p of problems.map(plan)) if (p.splits > 1) total += p.splits * p.M * p.N;
    return total;
  }

  encode(a: LoraGradArgs): KernelCall[] {
    const planned = a.problems.map(plan);
    for (const p of planned) {
      for (const d of ['M', 'N', 'K', 'ldx', 'ldy', 'ldo'] as const) checkDim('lora-grad', d, p[d]);
      checkRows('lora-grad', 'x', a.x, p.K, p.M, p.ldx, p.xOffset);
      checkRows('lora-grad', 'y', a.y, p.K, p.N, p.ldy, p.yOffset);
      if (p.transposed) checkRows('lora-grad', 'out', a.out, p.N, p.M, p.ldo, p.outOffset);
      else checkRows('lora-grad', 'out', a.out, p.M, p.N, p.ldo, p.outOffset);
    }
    checkElements('lora-grad', 'part', a.part, LoraGrad.partFloats(a.problems));
    const calls: KernelCall[] = [];
    let partOffset = 0;
    const splitProblems: Array<Planned & { partOffset: number }> = [];
    for (let i = 0; i < planned.length; i += MAXP) {
      const batch = planned.slice(i, i + MAXP).map((p) => {
        const withPart = { ...p, partOffset: p.splits > 1 ? partOffset : 0 };
        if (p.splits > 1) {
          partOffset += p.splits * p.M * p.N;
          splitProblems.push(withPart);
        }
        return withPart;
      });
      let first = 0;
      const firsts = batch.map((p) => {
        const f = first;
        first += p.tiles * p.splits;
        return f;
      });
      calls.push(this.problemCall('lora-grad.partial', 'partial', a, batch, firsts, first, grid(this.ctx, first)));
    }
    for (let i = 0; i < splitProblems.length; i += MAXP) {
      const batch = splitProblems.slice(i, i + MAXP);
      let first = 0;
      const firsts = batch.map((p) => {
        const f = first;
        first += p.M * p.N;
        return f;
      });
      calls.push(this.problemCall('lora-grad.reduce', 'reduce', a, batch, firsts, first, grid(this.ctx, Math.ceil(first / 256))));
    }
    return calls;
  }

  private problemCall(
    label: string,
    entryPoint: string,
    a: LoraGradArgs,
    problems: Array<Planned & { partOffset: number }>,
    firsts: number[],
    total: number,
    workgroups: [number, number, number],
  ): KernelCall {
    return this.call({
      label,
      pipeline: this.pipeline({ label, entryPoint, consts: { MAXP } }),
      buffers: { x: a.x, y: a.y, out: a.out, part: a.part },
      uniforms: {
        count: problems.length,
        total,
        problems: problems.map((p, i) => ({
          M: p.M,
          N: p.N,
          K: p.K,
          x_off: p.xOffset,
          ldx: p.ldx,
          y_off: p.yOffset,
          ldy: p.ldy,
          out_off: p.outOffset,
          ldo: p.ldo,
          transposed: p.transposed ? 1 : 0,
          kps: p.kps,
          splits: p.splits,
          part_off: p.partOffset,
          first: firsts[i],
          alpha: p.alpha,
        })),
      },
      workgroups,
    });
  }
}
