/**
 * Backward dense kernels on the GPU against the reference backward, seeded random inputs, odd
 * shapes: RmsNormBackward (from the forward's saved rstd, accumulating into a residual gradient, with
 * and without subgroups), SwiGluBackward (fused gate | up layout), and the GEMM variant of every
 * dX = dY W through a frozen packed weight stored [out, in] (f32 / f16 / bf16; the fused qkv and
 * gate_up weights; a weight split in row chunks, whose pieces accumulate along K).
 */
import { afterAll, describe, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { Gemm } from '../../src/engine/kernels/gemm';
import { RmsNorm } from '../../src/engine/kernels/rmsnorm';
import { RmsNormBackward } from '../../src/engine/kernels/rmsnorm-backward';
import { SwiGluBackward } from '../../src/engine/kernels/swiglu-backward';
import type { DType } from '../../src/engine/tensor/dtype';
import { expectClose } from '../../src/engine/reference/check';
import { linearBackward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { rmsnormBackward, rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { mlpActivationBackward } from '../../src/engine/reference/swiglu';
import { destroyContexts, kernelContext, packedMatrix, read, TOL, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

describe('RMSNorm backward', () => {
  for (const [N, C, subgroups] of [
    [7, 200, true],
    [5, 1000, true],
    [9, 333, false],
    [3, 1, true],
  ] as const) {
    it(`${N} rows of ${C}, rstd from the GPU forward, accumulating (${subgroups ? 'subgroups' : 'shared memory'})`, async () => {
      const ctx = await kernelContext({ subgroups });
      const rng = new Rng(N * 1000 + C);
      const eps = 1e-5;
      const x = rng.normals(N * C, 2);
      const w = rng.uniforms(C, 0.5, 1.5);
      const dout = rng.normals(N * C);
      const dinp0 = rng.normals(N * C);
      const vectors = upload(ctx, new Float32Array([...new Float32Array(64), ...w]));
      const xb = upload(ctx, x);
      const rstd = zeros(ctx, N);
      const dinp = upload(ctx, dinp0);
      await runCalls(ctx, [
        ...new RmsNorm(ctx).encode({ out: zeros(ctx, N * C), inp: xb, N, C, vectors, weightOffset: 64, eps, rstd }),
        ...new RmsNormBackward(ctx).encode({ dinp, dout: upload(ctx, dout), inp: xb, rstd, vectors, weightOffset: 64, N, C }),
      ]);
      const wantRstd = new Float32Array(N);
      rmsnormForward(new Float32Array(N * C), wantRstd, x, w, N, C, eps);
      const want = Float32Array.from(dinp0);
      rmsnormBackward(want, null, dout, x, w, wantRstd, N, C);
      expectClose(await read(ctx, dinp, N * C), want, TOL, 'dinp');
    });
  }

  it('rows at offsets and strides (Qwen-style 3 rows inside wider buffers), overwriting', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(77);
    const N = 3,
      C = 40,
      stride = 53,
      inOffset = 7,
      doutOffset = 2,
      dinpOffset = 11,
      rstdOffset = 5;
    const x = rng.normals(inOffset + N * stride);
    const dout = rng.normals(doutOffset + N * stride);
    const w = rng.uniforms(C, 0.5, 1.5);
    const rstdAll = rng.uniforms(rstdOffset + N, 0.3, 2);
    const init = rng.normals(dinpOffset + N * stride);
    const dinp = upload(ctx, init);
    await runCalls(ctx, [
      ...new RmsNormBackward(ctx).encode({
        dinp,
        dout: upload(ctx, dout),
        inp: upload(ctx, x),
        rstd: upload(ctx, rstdAll),
        vectors: upload(ctx, w),
        weightOffset: 0,
        N,
        C,
        accumulate: false,
        inOffset,
        inStride: stride,
        doutOffset,
        doutStride: stride,
        dinpOffset,
        dinpStride: stride,
        rstdOffset,
      }),
    ]);
    const want = Float32Array.from(init);
    for (let n = 0; n < N; n++) {
      const row = new Float32Array(C);
      const xs = x.subarray(inOffset + n * stride, inOffset + n * stride + C);
      const ds = dout.subarray(doutOffset + n * stride, doutOffset + n * stride + C);
      rmsnormBackward(row, null, ds, xs, w, rstdAll.subarray(rstdOffset + n, rstdOffset + n + 1), 1, C);
      want.set(row, dinpOffset + n * stride);
    }
    expectClose(await read(ctx, dinp, init.length), want, TOL, 'dinp (elements between rows untouched)');
  });
});

describe('SwiGLU backward', () => {
  for (const act of ['silu', 'gelu_tanh'] as const)
    it(`${act}: d[gate | up] of 13 rows of F 77 from strided inputs`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(6);
      const T = 13,
        F = 77,
        dStride = 80;
      const gu = rng.normals(T * 2 * F, 3);
      const dact = rng.normals(T * dStride);
      const dgu = zeros(ctx, T * 2 * F);
      await runCalls(ctx, [
        ...new SwiGluBackward(ctx).encode({
          dgateUp: dgu,
          dact: upload(ctx, dact),
          gateUp: upload(ctx, gu),
          T,
          F,
          dactStride: dStride,
          act,
        }),
      ]);
      const want = new Float32Array(T * 2 * F);
      for (let t = 0; t < T; t++) {
        const row = (a: Float32Array, off: number, stride: number) => a.subarray(t * stride + off, t * stride + off + F);
        const dg = new Float32Array(F);
        const du = new Float32Array(F);
        mlpActivationBackward(act, dg, du, row(dact, 0, dStride), row(gu, 0, 2 * F), row(gu, F, 2 * F), 1, F);
        want.set(dg, t * 2 * F);
        want.set(du, t * 2 * F + F);
      }
      expectClose(await read(ctx, dgu, T * 2 * F), want, TOL, 'd gate | d up');
    });
});

describe('GEMM dX = dY W through frozen packed weights [out, in]', () => {
  const cases: Array<{ name: string; dtype: DType; T: number; out: number; inF: number; chunkBytes?: number; accumulate: boolean }> = [
    { name: 'f32, fused qkv of a GQA model (out 6*16 + 2*2*16)', dtype: 'f32', T: 37, out: 160, inF: 96, accumulate: true },
    { name: 'f16, gate_up (out 2 * 136), 65 tokens', dtype: 'f16', T: 65, out: 272, inF: 96, accumulate: false },
    { name: 'bf16, down_proj (in 136 -> out 96), odd T', dtype: 'bf16', T: 19, out: 96, inF: 136, accumulate: true },
    { name: 'bf16, in not a multiple of 8 (100), out 129', dtype: 'bf16', T: 5, out: 129, inF: 100, accumulate: false },
    {
      name: 'f16 lm_head-like weight in row chunks (pieces along K accumulate)',
      dtype: 'f16',
      T: 7,
      out: 90,
      inF: 24,
      chunkBytes: 500,
      accumulate: true,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(c.T * 31 + c.out);
      const { matrix, ref: W } = packedMatrix(ctx, rng.normals(c.out * c.inF, 0.3), c.out, c.inF, c.dtype, c.chunkBytes);
      const dy = rng.normals(c.T * c.out);
      const dx0 = rng.normals(c.T * c.inF);
      const want = c.accumulate ? Float32Array.from(dx0) : new Float32Array(c.T * c.inF);
      linearBackward(want, null, null, dy, new Float32Array(c.T * c.inF), W, c.T, c.inF, c.out);
      // dX [T, in] = dY [T, out] W [out, in]: B stored [K, N] = [out, in], rows along K (the tiled
      // kernel's B_VEC8_N staging; gemm.test.ts compares it with the naive kernel too).
      const dx = upload(ctx, dx0);
      await runCalls(
        ctx,
        new Gemm(ctx).encode({
          out: dx,
          a: upload(ctx, dy),
          b: { weight: matrix, layout: 'rows-are-k' },
          M: c.T,
          N: c.inF,
          K: c.out,
          accumulate: c.accumulate,
        }),
      );
      expectClose(await read(ctx, dx, c.T * c.inF), want, TOL, 'dx');
    });
  }
});
