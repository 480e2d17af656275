import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { AddInto } from '../../src/engine/kernels/add';
import { Embedding } from '../../src/engine/kernels/embedding';
import { RmsNorm } from '../../src/engine/kernels/rmsnorm';
import { SwiGlu } from '../../src/engine/kernels/swiglu';
import { expectClose } from '../../src/engine/reference/check';
import { embeddingForward } from '../../src/engine/reference/embedding';
import { Rng } from '../../src/engine/tensor/random';
import { residualForward } from '../../src/engine/reference/residual';
import { rmsnormForward } from '../../src/engine/reference/rmsnorm';
import { mlpActivationForward } from '../../src/engine/reference/swiglu';
import { DTYPES, destroyContexts, kernelContext, packedMatrix, read, TOL, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

describe('prefill-side kernels against the reference', () => {
  for (const [C, subgroups] of [
    [200, true],
    [1000, true],
    [333, false],
  ] as const) {
    it(`rmsnorm of 7 rows of ${C}, saving 1/rms (${subgroups ? 'subgroups' : 'shared memory'})`, async () => {
      const ctx = await kernelContext({ subgroups });
      const rng = new Rng(C);
      const N = 7,
        eps = 1e-6;
      const x = rng.normals(N * C, 2);
      const w = rng.uniforms(C, 0.5, 1.5);
      const out = zeros(ctx, N * C);
      const rstd = zeros(ctx, N);
      const vectors = upload(ctx, new Float32Array([...new Float32Array(64), ...w]));
      await runCalls(ctx, [...new RmsNorm(ctx).encode({ out, inp: upload(ctx, x), N, C, vectors, weightOffset: 64, eps, rstd })]);
      const want = new Float32Array(N * C);
      const wantRstd = new Float32Array(N);
      rmsnormForward(want, wantRstd, x, w, N, C, eps);
      expectClose(await read(ctx, out, N * C), want, TOL, 'out');
      expectClose(await read(ctx, rstd, N), wantRstd, TOL, 'rstd');
    });
  }

  it("rmsnorm added into a residual (Gemma's post-attention / post-feedforward norms)", async () => {
    const ctx = await kernelContext();
    const rng = new Rng(9);
    const N = 5,
      C = 96,
      eps = 1e-6;
    const x = rng.normals(N * C, 2);
    const w = rng.uniforms(C, 0.5, 1.5);
    const h = rng.normals(N * C);
    const out = upload(ctx, h);
    await runCalls(ctx, [
      ...new RmsNorm(ctx).encode({ out, inp: upload(ctx, x), N, C, vectors: upload(ctx, w), weightOffset: 0, eps, accumulate: true }),
    ]);
    const want = new Float32Array(N * C);
    rmsnormForward(want, null, x, w, N, C, eps);
    for (let i = 0; i < N * C; i++) want[i] += h[i];
    expectClose(await read(ctx, out, N * C), want, TOL, 'h + rmsnorm(x)');
  });

  it('rmsnorm of gathered rows (the last token of each sequence) into a compact output', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(5);
    const T = 20,
      C = 96,
      eps = 1e-5;
    const x = rng.normals(T * C);
    const w = rng.uniforms(C, 0.5, 1.5);
    const rows = [4, 19, 0, 11];
    const out = zeros(ctx, rows.length * C);
    await runCalls(ctx, [
      ...new RmsNorm(ctx).encode({
        out,
        inp: upload(ctx, x),
        N: rows.length,
        C,
        vectors: upload(ctx, w),
        weightOffset: 0,
        eps,
        rows: upload(ctx, Uint32Array.from(rows)),
      }),
    ]);
    const picked = new Float32Array(rows.length * C);
    rows.forEach((r, i) => picked.set(x.subarray(r * C, (r + 1) * C), i * C));
    const want = new Float32Array(rows.length * C);
    rmsnormForward(want, null, picked, w, rows.length, C, eps);
    expectClose(await read(ctx, out, rows.length * C), want, TOL, 'out');
  });

  for (const act of ['silu', 'gelu_tanh'] as const)
    it(`${act} gated activation over a fused [gate | up] output`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(6);
      const T = 13,
        F = 77;
      const gu = rng.normals(T * 2 * F, 3);
      const out = zeros(ctx, T * F);
      await runCalls(ctx, [...new SwiGlu(ctx).encode({ out, gateUp: upload(ctx, gu), T, F, act })]);
      const gate = new Float32Array(T * F);
      const up = new Float32Array(T * F);
      for (let t = 0; t < T; t++) {
        gate.set(gu.subarray(t * 2 * F, t * 2 * F + F), t * F);
        up.set(gu.subarray(t * 2 * F + F, (t + 1) * 2 * F), t * F);
      }
      const want = new Float32Array(T * F);
      mlpActivationForward(act, want, gate, up, T, F);
      expectClose(await read(ctx, out, T * F), want, TOL, 'out');
    });

  it('adds into a residual at offsets', async () => {
    const ctx = await kernelContext();
    const rng = new Rng(7);
    const n = 1001;
    const a = rng.normals(n + 3);
    const b = rng.normals(n + 5);
    const out = upload(ctx, a);
    await runCalls(ctx, [...new AddInto(ctx).encode({ out, inp: upload(ctx, b), n, outOffset: 3, inOffset: 5 })]);
    const want = Float32Array.from(a);
    residualForward(want.subarray(3), a.subarray(3), b.subarray(5), n);
    expectClose(await read(ctx, out, n + 3), want, { atol: 0, rtol: 1e-7 }, 'out');
  });

  for (const dtype of DTYPES) {
    // Gemma scales its embeddings (by sqrt(C) in the weight dtype; 5.5 is exact in each).
    const scale = dtype === 'f32' ? 1 : 5.5;
    it(`embedding gather over row chunks (${dtype}, odd C, chunks of 7 rows, times ${scale})`, async () => {
      const ctx = await kernelContext();
      const rng = new Rng(8);
      const V = 50,
        C = 21;
      // rows of 24 elements; 7 rows per chunk -> 8 chunks (the last has 1 row)
      const rowBytes = 24 * (dtype === 'f32' ? 4 : 2);
      const { matrix, ref } = packedMatrix(ctx, rng.normals(V * C), V, C, dtype, 7 * rowBytes);
      expect(matrix.chunks).toHaveLength(8);
      const tokens = [49, 0, 7, 6, 13, 48, 7, 21];
      const T = tokens.length;
      const out = zeros(ctx, T * C + 5);
      await runCalls(
        ctx,
        new Embedding(ctx).encode({ out, tokens: upload(ctx, Uint32Array.from(tokens)), embedding: matrix, T, outOffset: 5, scale }),
      );
      const want = new Float32Array(T * C);
      embeddingForward(want, tokens, ref, T, C, V);
      for (let i = 0; i < want.length; i++) want[i] *= scale;
      expectClose((await read(ctx, out, T * C + 5)).subarray(5), want, { atol: 0, rtol: 0 }, 'rows');
    });
  }
});
