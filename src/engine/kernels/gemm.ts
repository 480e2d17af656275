/**
 * Gemm: the one matmul core of prefill and training (gemm.wgsl, with the naive gemm-naive.wgsl as
 * its readable definition and GPU oracle). C[M, N] (+)= A(M, K) B(K, N) (+ bias), f32 accumulation.
 *
 * - A: f32 activations, stored [M, K] ('rows-are-m') or [K, M] ('rows-are-k', the trainer's dH^T).
 * - B: a packed weight in its file dtype, or f32 activations; stored [N, K] ('rows-are-n': nn.Linear,
 *   Y = X W^T) or [K, N] ('rows-are-k': dX = dY W). A weight split in row chunks (the binding limit,
 *   or a fused matrix whose parts differ in dtype) gives one call per chunk, in the chunk's dtype:
 *   along N it writes its column range of C; along K each chunk adds its partial product (the first
 *   one writes unless `accumulate`).
 * - Epilogue: scale alpha, bias (f32 vectors buffer), accumulate into C (residual add; LoRA's
 *   s * (x A^T) B^T is two calls: u = X A^T, then C += s * u B^T).
 *
 * Tile (GemmTile): by default 64 x 64 outputs per 256-invocation workgroup, 4 x 4 per invocation, K
 * tile 16 (8 KiB of workgroup memory): the portable register-tiled shape of tfjs / llama.cpp
 * (docs/reference/wgsl-engine.md 1.2), 4 FMAs per staged value. KernelContext.gemmTile 'large':
 * 128 x 128, 8 x 8 per invocation, K tile 8 (8.3 KiB), 8 FMAs per staged value and twice as many
 * per value read from workgroup memory: on the H200, prefill and the training step's GEMMs ran
 * f32 SIMT at 13-27 TFLOP/s with the default (docs/performance.md "An H200 beside the peers"); the
 * bench's --gemm-tile 128 measures the large one. Not here: the decode GEMV (gemv.ts).
 */
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { GemmTileName } from '../gpu/context';
import type { PackedMatrix } from '../gpu/packed-tensor';
import type { DType } from '../tensor/dtype';
import { checkDim, placeholder, SpecKernel } from './spec-kernel';
import naive from './gemm-naive.wgsl?raw';
import paramsWgsl from './gemm-params.wgsl?raw';
import tiled from './gemm.wgsl?raw';
import { wgslSection } from './shader';
import { packed, params, ro, rw, type KernelSpec } from './spec';

/** gemm.wgsl with the inner loop of one tile: `small` (4 x 4 per invocation) or `large` (8 x 8). */
function tiledSection(keep: GemmTileName): string {
  return wgslSection(wgslSection(tiled, 'small', keep === 'small'), 'large', keep === 'large');
}

export const GEMM_SPEC: KernelSpec = {
  name: 'gemm',
  bindings: {
    a: ro('A', 'f32', 'A(m, k) = A[a_off + m * a_sm + k * a_sk]'),
    b: packed('B', 'packed, B(k, n) = B_load1(b_off + n * b_sn + k * b_sk)'),
    out: rw('C', 'f32', 'C[m, n] = C[c_off + m * c_sm + n]'),
    vectors: ro('VEC', 'f32', 'bias[n] = VEC[bias_off + n] (HAS_BIAS)'),
  },
  uniforms: params('M N K a_off a_sm a_sk b_off b_sn b_sk c_off c_sm bias_off alpha:f32'),
  shaders: {
    tiled: [paramsWgsl, tiledSection('small')],
    tiled8: [paramsWgsl, tiledSection('large')],
    naive: [paramsWgsl, naive],
  },
};

export type GemmB =
  | { weight: PackedMatrix; layout: 'rows-are-n' | 'rows-are-k' }
  | { f32: BufferRef; offset?: number; ld: number; layout: 'rows-are-n' | 'rows-are-k' };

export interface GemmArgs {
  /** C, f32: element (m, n) at cOffset + m * ldc + n. */
  out: BufferRef;
  cOffset?: number;
  ldc?: number;
  /** A, f32: element (m, k) at aOffset + m * lda + k ('rows-are-m') or aOffset + k * lda + m ('rows-are-k'). */
  a: BufferRef;
  aOffset?: number;
  lda?: number;
  aLayout?: 'rows-are-m' | 'rows-are-k';
  b: GemmB;
  M: number;
  N: number;
  K: number;
  /** Bias (N values) at this element offset of `vectors`. */
  vectors?: GPUBuffer;
  bias?: number | null;
  accumulate?: boolean;
  /** Scales the product (not the bias, not what is accumulated into): LoRA's s = lora_alpha / r. */
  alpha?: number;
  /** Use the naive kernel (tests, debugging). */
  naive?: boolean;
}

/** A GEMM tile: BM x BN outputs per workgroup, T x T per invocation, K staged BK at a time. */
interface GemmTile {
  BM: number;
  BN: number;
  BK: number;
  T: number;
  /** vec4s of padding per staged k-row (gemm.wgsl). */
  PAD: number;
}

const SMALL_TILE: GemmTile = { BM: 64, BN: 64, BK: 16, T: 4, PAD: 0 };
const LARGE_TILE: GemmTile = { BM: 128, BN: 128, BK: 8, T: 8, PAD: 1 };

interface Piece {
  buffer: BufferRef;
  dtype: DType;
  bOffset: number;
  sn: number;
  sk: number;
  /** Range of n (or k) this piece covers. */
  n0: number;
  n: number;
  k0: number;
  k: number;
}

export class Gemm extends SpecKernel.of(GEMM_SPEC) {
  encode(g: GemmArgs): KernelCall[] {
    checkDim('gemm', 'M', g.M);
    checkDim('gemm', 'N', g.N);
    checkDim('gemm', 'K', g.K);
    const aLayout = g.aLayout ?? 'rows-are-m';
    const lda = g.lda ?? (aLayout === 'rows-are-m' ? g.K : g.M);
    const [aSm, aSk] = aLayout === 'rows-are-m' ? [lda, 1] : [1, lda];
    const ldc = g.ldc ?? g.N;
    const bKContig = g.b.layout === 'rows-are-n';
    const pieces: Piece[] = [];
    if ('weight' in g.b) {
      const w = g.b.weight;
      const [rowsNeeded, colsNeeded] = bKContig ? [g.N, g.K] : [g.K, g.N];
      if (w.rows !== rowsNeeded || w.cols !== colsNeeded) {
        throw new Error(
          `gemm: ${w.label} is [${w.rows}, ${w.cols}], expected [${rowsNeeded}, ${colsNeeded}] for M ${g.M} N ${g.N} K ${g.K}`,
        );
      }
      for (const c of w.chunks) {
        pieces.push(
          bKContig
            ? { buffer: c.buffer, dtype: c.dtype, bOffset: 0, sn: c.rowStride, sk: 1, n0: c.rowStart, n: c.rows, k0: 0, k: g.K }
            : { buffer: c.buffer, dtype: c.dtype, bOffset: 0, sn: 1, sk: c.rowStride, n0: 0, n: g.N, k0: c.rowStart, k: c.rows },
        );
      }
    } else {
      const ld = g.b.ld;
      pieces.push({
        buffer: g.b.f32,
        dtype: 'f32',
        bOffset: g.b.offset ?? 0,
        sn: bKContig ? ld : 1,
        sk: bKContig ? 1 : ld,
        n0: 0,
        n: g.N,
        k0: 0,
        k: g.K,
      });
    }
    const flagsFor = (accum: boolean, bias: boolean) => ({ HAS_BIAS: bias, ACCUM: accum });
    const large = this.ctx.gemmTile === 'large';
    const { BM, BN, BK, T, PAD } = large ? LARGE_TILE : SMALL_TILE;
    const calls: KernelCall[] = [];
    pieces.forEach((p) => {
      // Along K, chunks after the first add their partial product; the bias is added once.
      const firstAlongK = p.k0 === 0;
      const accum = (g.accumulate ?? false) || !firstAlongK;
      const hasBias = g.bias != null && firstAlongK;
      if (hasBias && !g.vectors) throw new Error('gemm: a bias needs the vectors buffer');
      const consts = g.naive
        ? flagsFor(accum, hasBias)
        : {
            BM,
            BN,
            BK,
            T,
            PAD,
            WG: (BM / T) * (BN / T),
            A_KCONTIG: aSk === 1,
            B_KCONTIG: bKContig,
            B_VEC8: 'weight' in g.b && bKContig,
            // dX = dY W: a packed weight's rows run along K, so 8 consecutive n share one load.
            B_VEC8_N: 'weight' in g.b && !bKContig,
            ...flagsFor(accum, hasBias),
          };
      const label = `gemm${g.naive ? '-naive' : ''}.${p.dtype}`;
      const pipeline = this.pipeline({ label, consts, weights: { B: p.dtype }, variant: g.naive ? 'naive' : large ? 'tiled8' : 'tiled' });
      const workgroups: [number, number, number] = g.naive
        ? [Math.ceil(p.n / 16), Math.ceil(g.M / 16), 1]
        : [Math.ceil(p.n / BN), Math.ceil(g.M / BM), 1];
      calls.push(
        this.call({
          label,
          pipeline,
          buffers: { a: g.a, b: p.buffer, out: g.out, vectors: g.vectors ?? placeholder(this.ctx) },
          uniforms: {
            M: g.M,
            N: p.n,
            K: p.k,
            a_off: (g.aOffset ?? 0) + p.k0 * aSk,
            a_sm: aSm,
            a_sk: aSk,
            b_off: p.bOffset,
            b_sn: p.sn,
            b_sk: p.sk,
            c_off: (g.cOffset ?? 0) + p.n0,
            c_sm: ldc,
            bias_off: (g.bias ?? 0) + p.n0,
            alpha: g.alpha ?? 1,
          },
          workgroups,
        }),
      );
    });
    return calls;
  }

  record(pass: GPUComputePassEncoder, g: GemmArgs): KernelCall[] {
    const calls = this.encode(g);
    for (const c of calls) c.record(pass, this.ctx);
    return calls;
  }
}
