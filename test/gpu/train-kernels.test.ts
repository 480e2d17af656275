// The trainer's own kernels against their references on seeded random inputs: the fused
// cross-entropy (forward and in-place backward), the split-K LoRA weight gradients, the global
// gradient norm with clipping, and AdamW.
import { afterAll, describe, expect, it } from 'vitest';
import { runCalls } from '../../src/engine/gpu/kernel-call';
import { AdamW } from '../../src/engine/kernels/adamw';
import { CrossEntropy, NO_TARGET } from '../../src/engine/kernels/cross-entropy';
import { GradNorm } from '../../src/engine/kernels/grad-norm';
import { LoraGrad, type LoraGradProblem } from '../../src/engine/kernels/lora-grad';
import { adamwStep, clipGradNorm } from '../../src/engine/reference/adamw';
import { expectClose } from '../../src/engine/reference/check';
import { crossEntropyBackward, crossEntropyForward } from '../../src/engine/reference/cross-entropy';
import { Rng } from '../../src/engine/tensor/random';
import { destroyContexts, kernelContext, read, upload, zeros } from './dense-helpers';

afterAll(destroyContexts);

describe('cross-entropy over the vocabulary', () => {
  for (const [V, scale] of [
    [1000, 3],
    [211, 30],
  ] as const) {
    it(`V ${V}, logits ~ N(0, ${scale}^2): logprobs, entropies and dlogits of a chunk of rows`, async () => {
      const ctx = await kernelContext();
      const ce = new CrossEntropy(ctx);
      const rng = new Rng(V);
      const rows = 45;
      const row0 = 8; // the chunk's first row in the per-token arrays
      const R = 37;
      const ld = V + 3; // padded rows
      const logits = new Float32Array(R * ld);
      for (let r = 0; r < R; r++) for (let v = 0; v < V; v++) logits[r * ld + v] = scale * rng.normal();
      const targets = Uint32Array.from({ length: rows }, (_, i) => (i % 11 === 5 ? NO_TARGET : rng.int(V)));
      const coef = Float32Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? 0 : rng.normal()));
      const dense = new Float32Array(R * V);
      for (let r = 0; r < R; r++) dense.set(logits.subarray(r * ld, r * ld + V), r * V);
      // Reference over the rows that have a target.
      const wantLp = new Float32Array(R).fill(NaN);
      const wantH = new Float32Array(R);
      const wantD = new Float32Array(R * V);
      for (let r = 0; r < R; r++) {
        const t = targets[row0 + r];
        const lp = new Float32Array(1);
        const h = new Float32Array(1);
        crossEntropyForward(lp, h, dense.subarray(r * V, (r + 1) * V), [t === NO_TARGET ? 0 : t], 1, V);
        if (t !== NO_TARGET) wantLp[r] = lp[0];
        wantH[r] = h[0];
        if (t !== NO_TARGET)
          crossEntropyBackward(wantD.subarray(r * V, (r + 1) * V), dense.subarray(r * V, (r + 1) * V), [t], [coef[row0 + r]], 1, V);
      }
      const stats = zeros(ctx, 2 * rows);
      const lbuf = upload(ctx, logits);
      const tbuf = upload(ctx, targets);
      await runCalls(ctx, [...ce.encode({ logits: lbuf, ld, R, V, targets: tbuf, row0, stats, lpOffset: 0, entOffset: rows })]);
      const s = await read(ctx, stats, 2 * rows);
      expectClose(s.subarray(row0, row0 + R), wantLp, { atol: 2e-5, rtol: 2e-5 }, 'logprobs');
      expectClose(s.subarray(rows + row0, rows + row0 + R), wantH, { atol: 2e-5, rtol: 2e-5 }, 'entropies');
      expect(await read(ctx, lbuf, R * ld)).toEqual(logits); // forward leaves the logits alone
      await runCalls(ctx, [
        ...ce.encode({ logits: lbuf, ld, R, V, targets: tbuf, row0, coef: upload(ctx, coef), stats, lpOffset: 0, entOffset: rows }),
      ]);
      const d = await read(ctx, lbuf, R * ld);
      const gotD = new Float32Array(R * V);
      for (let r = 0; r < R; r++) gotD.set(d.subarray(r * ld, r * ld + V), r * V);
      expectClose(gotD, wantD, { atol: 1e-6, rtol: 1e-4 }, 'dlogits');
    });
  }
});

describe('LoRA weight gradients, split-K', () => {
  /** out (+)= alpha X^T Y, with X (K, ldx) and Y (K, ldy), the plain way. */
  function reference(out: Float64Array, x: Float32Array, y: Float32Array, p: LoraGradProblem): void {
    for (let m = 0; m < p.M; m++) {
      for (let n = 0; n < p.N; n++) {
        let s = 0;
        for (let t = 0; t < p.K; t++) s += x[p.xOffset + t * p.ldx + m] * y[p.yOffset + t * p.ldy + n];
        const o = p.transposed ? p.outOffset + n * p.ldo + m : p.outOffset + m * p.ldo + n;
        out[o] += p.alpha * s;
      }
    }
  }

  for (const K of [5, 300, 1500]) {
    it(`dB^T (transposed store) and dA problems in one dispatch, ${K} tokens`, async () => {
      const ctx = await kernelContext();
      const lg = new LoraGrad(ctx);
      const rng = new Rng(K);
      const r = 4;
      const ldx = 3 * r + 2;
      const ldy = 83;
      const x = rng.normals(K * ldx);
      const y = rng.normals(K * ldy);
      // dB^T of a [37, 4] B at the start, dA [3r, 70] after it, a second dB with an odd column offset.
      const problems: LoraGradProblem[] = [
        { M: r, N: 37, K, xOffset: 0, ldx, yOffset: 5, ldy, outOffset: 0, ldo: r, transposed: true, alpha: 0.75 },
        { M: 3 * r, N: 70, K, xOffset: 0, ldx, yOffset: 13, ldy, outOffset: 37 * r, ldo: 70, transposed: false, alpha: 1 },
        { M: r, N: 9, K, xOffset: 2 * r + 1, ldx, yOffset: 71, ldy, outOffset: 37 * r + 3 * r * 70, ldo: r, transposed: true, alpha: -2 },
      ];
      const n = 37 * r + 3 * r * 70 + 9 * r;
      const init = rng.normals(n);
      const want = Float64Array.from(init);
      for (const p of problems) reference(want, x, y, p);
      const run = async () => {
        const out = upload(ctx, init);
        const part = zeros(ctx, Math.max(4, LoraGrad.partFloats(problems)));
        await runCalls(ctx, lg.encode({ x: upload(ctx, x), y: upload(ctx, y), out, part, problems }));
        return read(ctx, out, n);
      };
      const got = await run();
      expectClose(got, want, { atol: 2e-4 * Math.sqrt(K), rtol: 1e-4 }, 'gradients');
      if (K >= 300) expect(LoraGrad.partFloats(problems)).toBeGreaterThan(0); // the split path ran
      expect(await run()).toEqual(got); // deterministic: same bits again
    });
  }
});

describe('gradient norm, clipping and AdamW', () => {
  it('norm and clip factor of 100003 gradients; three AdamW steps against PyTorch semantics', async () => {
    const ctx = await kernelContext();
    const norm = new GradNorm(ctx);
    const adamw = new AdamW(ctx);
    const rng = new Rng(5);
    const n = 100003;
    const params = rng.normals(n, 0.1);
    const grads = rng.normals(n, 0.02);
    const pBuf = upload(ctx, params);
    const gBuf = upload(ctx, grads);
    const mBuf = zeros(ctx, n);
    const vBuf = zeros(ctx, n);
    const stats = zeros(ctx, 4);
    const part = zeros(ctx, GradNorm.partsFor(n));
    const want = { p: Float32Array.from(params), m: new Float32Array(n), v: new Float32Array(n) };
    const h = { lr: 1e-3, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1 };
    for (const [step, maxNorm] of [
      [1, 0.1],
      [2, 0],
      [3, 100],
    ] as const) {
      await runCalls(ctx, [
        ...norm.encode({ grads: gBuf, n, part, stats, maxNorm }),
        ...adamw.encode({ params: pBuf, grads: gBuf, m: mBuf, v: vBuf, stats, n, hyper: { ...h, step } }),
      ]);
      const ref = clipGradNorm(grads, maxNorm);
      const s = await read(ctx, stats, 2);
      expect(s[0]).toBeCloseTo(ref.norm, 4);
      expect(s[1]).toBeCloseTo(ref.clip, 5);
      if (maxNorm === 0 || maxNorm === 100) expect(s[1]).toBe(1);
      adamwStep(want.p, want.m, want.v, grads, s[1], { ...h, step });
      expectClose(await read(ctx, pBuf, n), want.p, { atol: 1e-6, rtol: 1e-5 }, `params after step ${step}`);
      expectClose(await read(ctx, mBuf, n), want.m, { atol: 1e-9, rtol: 1e-5 }, `exp_avg after step ${step}`);
      expectClose(await read(ctx, vBuf, n), want.v, { atol: 1e-12, rtol: 1e-5 }, `exp_avg_sq after step ${step}`);
    }
  });
});
