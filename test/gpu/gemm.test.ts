import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import type { DType } from '../../src/engine/tensor/dtype';
import type { GemmArgs } from '../../src/engine/kernels/gemm';
import { Gemm } from '../../src/engine/kernels/gemm';
import { expectClose } from '../../src/engine/reference/check';
import { matmulForward } from '../../src/engine/reference/linear';
import { Rng } from '../../src/engine/tensor/random';
import { destroyContexts, kernelContext, packedMatrix, read, TOL, upload } from './dense-helpers';

afterAll(destroyContexts);

/** Runs the tiled kernel (both tiles: 64 x 64 and 128 x 128) and the naive one on the same inputs; each must match the reference. */
async function bothKernels(args: Omit<GemmArgs, 'out'>, outInit: Float32Array, want: Float32Array, label: string) {
  const ctx = await kernelContext();
  const variants = [
    { name: 'tiled', gemm: new Gemm(ctx), naive: false },
    { name: 'tiled 128 x 128', gemm: new Gemm({ ...ctx, gemmTile: 'large' }), naive: false },
    { name: 'naive', gemm: new Gemm(ctx), naive: true },
  ];
  for (const { name, gemm, naive } of variants) {
    const out = upload(ctx, outInit);
    await runCalls(ctx, gemm.encode({ ...args, out, naive }));
    expectClose(await read(ctx, out, want.length), want, TOL, `${label} (${name})`);
  }
}

describe('GEMM against the reference matmul', () => {
  const shapes: Array<[DType, number, number, number]> = [
    ['f32', 37, 70, 45],
    ['f16', 130, 65, 33],
    ['bf16', 5, 129, 100],
  ];
  for (const [dtype, M, N, K] of shapes) {
    it(`Y = X W^T + b, ${dtype} weights, M=${M} N=${N} K=${K}`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(M + N + K);
      const { matrix, ref: w } = packedMatrix(ctx, rng.normals(N * K, 0.4), N, K, dtype);
      const x = rng.normals(M * K);
      const bias = rng.normals(N);
      const want = new Float32Array(M * N);
      matmulForward(want, x, w, M, N, K, { transB: true, bias });
      await bothKernels(
        { a: upload(ctx, x), b: { weight: matrix, layout: 'rows-are-n' }, M, N, K, vectors: upload(ctx, bias), bias: 0 },
        new Float32Array(M * N),
        want,
        'y',
      );
    });
  }

  it('dX = dY W (weight rows along K) accumulating into dX', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(21);
    const M = 19,
      N = 40,
      K = 67; // W is [K, N] = [out, in]
    const { matrix, ref: w } = packedMatrix(ctx, rng.normals(K * N, 0.4), K, N, 'bf16');
    const dy = rng.normals(M * K);
    const dx0 = rng.normals(M * N);
    const want = Float32Array.from(dx0);
    matmulForward(want, dy, w, M, N, K, { accumulate: true });
    await bothKernels({ a: upload(ctx, dy), b: { weight: matrix, layout: 'rows-are-k' }, M, N, K, accumulate: true }, dx0, want, 'dx');
  });

  it('dA = dH^T X on f32 operands (transposed A)', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(22);
    const T = 53,
      r = 6,
      C = 70; // dH [T, r], X [T, C] -> dA [r, C] = dH^T X
    const dh = rng.normals(T * r);
    const x = rng.normals(T * C);
    const want = new Float32Array(r * C);
    matmulForward(want, dh, x, r, C, T, { transA: true });
    await bothKernels(
      { a: upload(ctx, dh), aLayout: 'rows-are-k', b: { f32: upload(ctx, x), ld: C, layout: 'rows-are-k' }, M: r, N: C, K: T },
      new Float32Array(r * C),
      want,
      'dA',
    );
  });

  it('f32 B stored [N, K] with offsets and strides (LoRA u = x A^T into a wider buffer)', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(23);
    const M = 33,
      N = 8,
      K = 48,
      ldc = 12,
      cOffset = 2,
      aOffset = 5,
      lda = 50,
      bOffset = 4;
    const x = rng.normals(aOffset + M * lda);
    const aMat = rng.normals(bOffset + N * K);
    const out0 = rng.normals(cOffset + M * ldc);
    const want = Float32Array.from(out0);
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += x[aOffset + m * lda + k] * aMat[bOffset + n * K + k];
        want[cOffset + m * ldc + n] = s;
      }
    }
    await bothKernels(
      {
        a: upload(ctx, x),
        aOffset,
        lda,
        b: { f32: upload(ctx, aMat), offset: bOffset, ld: K, layout: 'rows-are-n' },
        M,
        N,
        K,
        ldc,
        cOffset,
      },
      out0,
      want,
      'u',
    );
  });

  it('LoRA on a Linear: Y = X W^T, then Y += s (X A^T) B^T with alpha, all on one output', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(25);
    const T = 21,
      C = 40,
      O = 36,
      r = 4,
      s = 2.5;
    const { matrix, ref: w } = packedMatrix(ctx, rng.normals(O * C, 0.3), O, C, 'bf16');
    const x = rng.normals(T * C);
    const A = rng.normals(r * C, 0.3); // [r, in]
    const Bm = rng.normals(O * r, 0.3); // [out, r]
    const y = upload(ctx, new Float32Array(T * O));
    const u = upload(ctx, new Float32Array(T * r));
    const xb = upload(ctx, x);
    const gemm = new Gemm(ctx);
    await runCalls(ctx, [
      ...gemm.encode({ out: y, a: xb, b: { weight: matrix, layout: 'rows-are-n' }, M: T, N: O, K: C }),
      ...gemm.encode({ out: u, a: xb, b: { f32: upload(ctx, A), ld: C, layout: 'rows-are-n' }, M: T, N: r, K: C }),
      ...gemm.encode({
        out: y,
        a: u,
        b: { f32: upload(ctx, Bm), ld: r, layout: 'rows-are-n' },
        M: T,
        N: O,
        K: r,
        alpha: s,
        accumulate: true,
      }),
    ]);
    // Reference: W + s B A merged (PEFT's delta weight), then one product.
    const merged = Float32Array.from(w);
    for (let o = 0; o < O; o++)
      for (let i = 0; i < C; i++) for (let j = 0; j < r; j++) merged[o * C + i] += s * Bm[o * r + j] * A[j * C + i];
    const want = new Float32Array(T * O);
    matmulForward(want, x, merged, T, O, C, { transB: true });
    expectClose(await read(ctx, y, T * O), want, TOL, 'y');
  });

  it('splits a chunked weight along N (lm_head) and along K (its backward) into disjoint or summed calls', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(24);
    const V = 90,
      C = 24; // E [V, C], 48-byte f16 rows, 500-byte chunks of 10 rows -> 9 chunks
    const { matrix, ref: e } = packedMatrix(ctx, rng.normals(V * C), V, C, 'f16', 500);
    expect(matrix.chunks).toHaveLength(9);
    const M = 7;
    const h = rng.normals(M * C);
    const logits = new Float32Array(M * V);
    matmulForward(logits, h, e, M, V, C, { transB: true });
    const gemm = new Gemm(ctx);
    expect(
      gemm.encode({
        out: upload(ctx, new Float32Array(M * V)),
        a: upload(ctx, h),
        b: { weight: matrix, layout: 'rows-are-n' },
        M,
        N: V,
        K: C,
      }),
    ).toHaveLength(9);
    await bothKernels(
      { a: upload(ctx, h), b: { weight: matrix, layout: 'rows-are-n' }, M, N: V, K: C },
      new Float32Array(M * V),
      logits,
      'logits',
    );
    const dlogits = rng.normals(M * V);
    const dh = new Float32Array(M * C);
    matmulForward(dh, dlogits, e, M, C, V);
    await bothKernels(
      { a: upload(ctx, dlogits), b: { weight: matrix, layout: 'rows-are-k' }, M, N: C, K: V },
      rng.normals(M * C),
      dh,
      'dh',
    );
  });

  it('refuses a weight whose shape does not fit the product', async () => {
    const ctx = await kernelContext();
    const { matrix } = packedMatrix(ctx, new Float32Array(6 * 8), 6, 8, 'f32');
    expect(() =>
      new Gemm(ctx).encode({
        out: upload(ctx, new Float32Array(16)),
        a: upload(ctx, new Float32Array(16)),
        b: { weight: matrix, layout: 'rows-are-n' },
        M: 2,
        N: 8,
        K: 6,
      }),
    ).toThrow('gemm: w[6x8] is [6, 8], expected [8, 6] for M 2 N 8 K 6');
  });
});
