import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import type { DType } from '../../src/engine/tensor/dtype';
import { Gemv } from '../../src/engine/kernels/gemv';
import { expectClose } from '../../src/engine/reference/check';
import { linearForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { silu } from '../../src/engine/reference/swiglu';
import { destroyContexts, kernelContext, packedMatrix, read, TOL, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

describe('decode GEMV against the reference linear', () => {
  // Each dtype, each batch group (B = 1, 3, 13: groups of 1, 4 and 8, two workgroup rows along y at
  // 13) and both reductions, without the full cross product: compiling a variant is what costs time on
  // SwiftShader. Shapes are not multiples of the tiles; K = 203 pads rows to 208 elements.
  const cases: Array<[DType, boolean, number, number, number]> = [
    ['f32', true, 3, 70, 96],
    ['f16', true, 3, 70, 96],
    ['bf16', true, 3, 70, 96],
    ['f16', true, 1, 37, 203],
    ['bf16', true, 13, 33, 1000],
    ['f32', false, 8, 19, 1000],
    ['bf16', false, 1, 37, 203],
  ];
  for (const [dtype, subgroups, B, N, K] of cases) {
    it(`${dtype} B=${B} N=${N} K=${K} ${subgroups ? 'subgroups' : 'shared-memory reduction'}`, async () => {
      const ctx = await kernelContext({ subgroups });
      const rng = new Rng(B * 1000 + N + K);
      const { matrix, ref: w } = packedMatrix(ctx, rng.normals(N * K, 0.5), N, K, dtype);
      const x = rng.normals(B * K);
      const bias = rng.normals(N);
      const vectors = upload(ctx, bias);
      const out = zeros(ctx, B * N);
      const gemv = new Gemv(ctx);
      await runCalls(ctx, gemv.encode({ out, x: upload(ctx, x), weight: matrix, B, vectors, bias: 0 }));
      const want = new Float32Array(B * N);
      linearForward(want, x, w, bias, B, K, N);
      expectClose(await read(ctx, out, B * N), want, TOL, 'y');
    });
  }

  it('accumulates into strided outputs and reads strided inputs', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(7);
    const B = 5,
      N = 24,
      K = 40,
      xStride = 50,
      yStride = 30,
      xOffset = 3,
      yOffset = 2;
    const { matrix, ref: w } = packedMatrix(ctx, rng.normals(N * K), N, K, 'bf16');
    const x = rng.normals(xOffset + B * xStride);
    const y0 = rng.normals(yOffset + B * yStride);
    const out = upload(ctx, y0);
    await runCalls(
      ctx,
      new Gemv(ctx).encode({ out, x: upload(ctx, x), weight: matrix, B, xOffset, xStride, yOffset, yStride, accumulate: true }),
    );
    const got = await read(ctx, out, y0.length);
    const want = Float32Array.from(y0);
    for (let b = 0; b < B; b++) {
      for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += w[n * K + k] * x[xOffset + b * xStride + k];
        want[yOffset + b * yStride + n] += s;
      }
    }
    expectClose(got, want, TOL, 'y');
  });

  it('folds an RMSNorm into the activation load (lm_head after the final norm)', async () => {
    for (const subgroups of [true, false]) {
      const ctx = await kernelContext({ subgroups });
      const rng = new Rng(8);
      const B = 3,
        N = 50,
        K = 136,
        eps = 1e-5;
      const { matrix, ref: w } = packedMatrix(ctx, rng.normals(N * K, 0.3), N, K, 'f16');
      const x = rng.normals(B * K, 3);
      const normW = rng.uniforms(K, 0.5, 1.5);
      const out = zeros(ctx, B * N);
      await runCalls(
        ctx,
        new Gemv(ctx).encode({ out, x: upload(ctx, x), weight: matrix, B, vectors: upload(ctx, normW), norm: { offset: 0, eps } }),
      );
      const xn = new Float32Array(B * K);
      rmsnormForward(xn, null, x, normW, B, K, eps);
      const want = new Float32Array(B * N);
      linearForward(want, xn, w, null, B, K, N);
      expectClose(await read(ctx, out, B * N), want, TOL, `y (subgroups ${subgroups})`);
    }
  });

  it('computes silu(gate) * up over a fused [gate; up] matrix with biases', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(9);
    const B = 4,
      F = 45,
      K = 72;
    const { matrix, ref: w } = packedMatrix(ctx, rng.normals(2 * F * K, 0.3), 2 * F, K, 'bf16');
    const x = rng.normals(B * K);
    const bias = rng.normals(2 * F, 0.1);
    const vectors = upload(ctx, new Float32Array([0, 0, 0, ...bias]));
    const out = zeros(ctx, B * F);
    await runCalls(ctx, new Gemv(ctx).encode({ out, x: upload(ctx, x), weight: matrix, B, swiglu: true, vectors, bias: 3 }));
    const gu = new Float32Array(B * 2 * F);
    linearForward(gu, x, w, bias, B, K, 2 * F);
    const want = new Float32Array(B * F);
    for (let b = 0; b < B; b++) for (let f = 0; f < F; f++) want[b * F + f] = silu(gu[b * 2 * F + f]) * gu[b * 2 * F + F + f];
    expectClose(await read(ctx, out, B * F), want, TOL, 'h');
  });

  it('runs one call per row chunk of a split weight, each on its column range', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(10);
    const B = 2,
      N = 101,
      K = 24;
    // 24 f16 elements = 48 bytes per row: 1000-byte chunks hold 20 rows -> 6 chunks.
    const { matrix, ref: w } = packedMatrix(ctx, rng.normals(N * K), N, K, 'f16', 1000);
    expect(matrix.chunks.map((c) => c.rows)).toEqual([20, 20, 20, 20, 20, 1]);
    const x = rng.normals(B * K);
    const bias = rng.normals(N);
    const out = zeros(ctx, B * N);
    const calls = new Gemv(ctx).encode({ out, x: upload(ctx, x), weight: matrix, B, vectors: upload(ctx, bias), bias: 0 });
    expect(calls).toHaveLength(6);
    await runCalls(ctx, calls);
    const want = new Float32Array(B * N);
    linearForward(want, x, w, bias, B, K, N);
    expectClose(await read(ctx, out, B * N), want, TOL, 'y');
  });

  it('refuses inputs too small for the shapes', async () => {
    const ctx = await kernelContext();
    const { matrix } = packedMatrix(ctx, new Float32Array(8 * 16), 8, 16, 'f32');
    expect(() => new Gemv(ctx).encode({ out: zeros(ctx, 8), x: zeros(ctx, 16), weight: matrix, B: 2 })).toThrow(
      /gemv: x needs 32 elements, the binding holds 16/,
    );
  });
});
