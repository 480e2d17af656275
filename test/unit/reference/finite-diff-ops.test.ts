/**
 * The reference backward of every op against central finite differences, in f64 (reference ops run
 * on Float64Array, so rounding stays ~1e-16 and h = 1e-6 leaves a truncation error ~1e-12).
 * Each op's loss is L = sum(R * out) with a fixed random R, so dout = R. Tolerance: atol 1e-7 +
 * rtol 1e-6 per entry, several orders above the FD error and far below any real mistake (a wrong
 * term changes gradients at the 1e-2 .. 1 level). Every backward also starts from non-zero
 * gradient buffers, checking that it accumulates (+=) rather than overwrites.
 */
import { describe, expect, it } from 'vitest';
import { NO_ADAPTER } from '../../../src/engine/kernels/kv-layout';
import { ropeInvFreq } from '../../../src/engine/model/config/rope';
import { attentionBackward, attentionForward } from '../../../src/engine/reference/attention';
import { crossEntropyBackward, crossEntropyForward } from '../../../src/engine/reference/cross-entropy';
import type { Floats } from '../../../src/engine/reference/floats';
import { linearBackward, linearForward } from '../../../src/engine/reference/linear';
import { loraBackward, loraForward } from '../../../src/engine/reference/lora';
import { qkvPrepBackward } from '../../../src/engine/reference/qkv-prep-backward';
import { Rng } from '../../../src/engine/tensor/random';
import { residualBackward, residualForward } from '../../../src/engine/reference/residual';
import { rmsnormBackward, rmsnormForward } from '../../../src/engine/reference/rmsnorm';
import { ropeBackward, ropeForward } from '../../../src/engine/reference/rope';
import { geluTanh, mlpActivationBackward, mlpActivationForward, silu } from '../../../src/engine/reference/swiglu';
import { checkGradient, normals64, weightedSum } from './finite-diff';

const TOL = { atol: 1e-7, rtol: 1e-6 };

/** Backward into buffers pre-filled with `init`, minus `init`: the pure gradient, proving accumulation. */
function accumulated(init: Float64Array, run: (buf: Float64Array) => void): Float64Array {
  const buf = Float64Array.from(init);
  run(buf);
  return buf.map((v, i) => v - init[i]);
}

describe('finite differences: reference backward of each op (f64)', () => {
  it('rmsnorm: dinp and dweight (rows of 7 and of 1)', () => {
    for (const [N, C] of [
      [3, 7],
      [2, 1],
    ]) {
      const rng = new Rng(100 + C);
      const inp = normals64(rng, N * C);
      const weight = Float64Array.from({ length: C }, () => 1 + 0.3 * rng.normal());
      const R = normals64(rng, N * C);
      const eps = 1e-5;
      const loss = () => {
        const out = new Float64Array(N * C);
        rmsnormForward(out, null, inp, weight, N, C, eps);
        return weightedSum(out, R);
      };
      const rstd = new Float64Array(N);
      rmsnormForward(new Float64Array(N * C), rstd, inp, weight, N, C, eps);
      const dinp = accumulated(normals64(rng, N * C), (b) => rmsnormBackward(b, null, R, inp, weight, rstd, N, C));
      const dweight = accumulated(normals64(rng, C), (b) => rmsnormBackward(new Float64Array(N * C), b, R, inp, weight, rstd, N, C));
      checkGradient(`rmsnorm dinp ${N}x${C}`, inp, dinp, loss, TOL);
      checkGradient(`rmsnorm dweight ${N}x${C}`, weight, dweight, loss, TOL);
    }
  });

  it('RoPE: rotating back by -theta at positions 0, 5 and 1000 (HS 8 and 24)', () => {
    for (const HS of [8, 24]) {
      const rng = new Rng(200 + HS);
      const T = 3,
        NH = 2;
      const positions = [0, 5, 1000];
      const invFreq = ropeInvFreq({ headDim: HS, ropeTheta: 10000, ropeScaling: null });
      const inp = normals64(rng, T * NH * HS);
      const R = normals64(rng, T * NH * HS);
      const loss = () => {
        const out = new Float64Array(T * NH * HS);
        ropeForward(out, inp, positions, invFreq, T, NH, HS);
        return weightedSum(out, R);
      };
      const dinp = accumulated(normals64(rng, inp.length), (b) => ropeBackward(b, R, positions, invFreq, T, NH, HS));
      checkGradient(`rope HS ${HS}`, inp, dinp, loss, TOL);
    }
  });

  it('causal GQA attention: dq, dk, dv, with a cached prefix (pos0 2) and without, with sliding windows 3 and 2', () => {
    const cases: Array<{ T: number; pos0: number; NH: number; NKV: number; HS: number; W?: number }> = [
      { T: 5, pos0: 2, NH: 6, NKV: 2, HS: 4 },
      { T: 4, pos0: 0, NH: 3, NKV: 3, HS: 5 },
      { T: 3, pos0: 0, NH: 4, NKV: 1, HS: 6 },
      { T: 6, pos0: 0, NH: 4, NKV: 2, HS: 4, W: 3 },
      { T: 4, pos0: 3, NH: 2, NKV: 1, HS: 5, W: 2 },
    ];
    for (const { T, pos0, NH, NKV, HS, W = 0 } of cases) {
      const S = pos0 + T;
      const rng = new Rng(300 + T * 7 + NH);
      const q = normals64(rng, T * NH * HS);
      const k = normals64(rng, S * NKV * HS);
      const v = normals64(rng, S * NKV * HS);
      const R = normals64(rng, T * NH * HS);
      const loss = () => {
        const out = new Float64Array(T * NH * HS);
        attentionForward(out, q, k, v, T, S, NH, NKV, HS, pos0, W);
        return weightedSum(out, R);
      };
      const dq0 = normals64(rng, q.length);
      const dk0 = normals64(rng, k.length);
      const dv0 = normals64(rng, v.length);
      const dq = Float64Array.from(dq0);
      const dk = Float64Array.from(dk0);
      const dv = Float64Array.from(dv0);
      attentionBackward(dq, dk, dv, R, q, k, v, T, S, NH, NKV, HS, pos0, W);
      const minus = (a: Float64Array, b: Float64Array) => a.map((x, i) => x - b[i]);
      const label = `attention T ${T} pos0 ${pos0} NH ${NH} NKV ${NKV} window ${W}`;
      checkGradient(`${label} dq`, q, minus(dq, dq0), loss, TOL);
      checkGradient(`${label} dk`, k, minus(dk, dk0), loss, TOL);
      checkGradient(`${label} dv`, v, minus(dv, dv0), loss, TOL);
    }
  });

  // SwiGLU, and Gemma's GeGLU (gelu_tanh).
  for (const [act, fn, seed] of [
    ['silu', silu, 400],
    ['gelu_tanh', geluTanh, 401],
  ] as const) {
    it(`${act} gated activation: d gate and d up, gates from -8 to 8`, () => {
      const rng = new Rng(seed);
      const N = 3,
        F = 9;
      const gate = Float64Array.from({ length: N * F }, (_, i) => -8 + (16 * i) / (N * F - 1) + 0.01 * rng.normal());
      const up = normals64(rng, N * F);
      const R = normals64(rng, N * F);
      const loss = () => {
        const out = new Float64Array(N * F);
        mlpActivationForward(act, out, gate, up, N, F);
        return weightedSum(out, R);
      };
      const backward = (dg: Float64Array, du: Float64Array) => mlpActivationBackward(act, dg, du, R, gate, up, N, F);
      const dgate = accumulated(normals64(rng, N * F), (b) => backward(b, new Float64Array(N * F)));
      const dup = accumulated(normals64(rng, N * F), (b) => backward(new Float64Array(N * F), b));
      checkGradient(`${act} dgate`, gate, dgate, loss, TOL);
      checkGradient(`${act} dup`, up, dup, loss, TOL);
      // d up is act(gate) itself times R
      for (let i = 0; i < N * F; i++) expect(dup[i]).toBeCloseTo(R[i] * fn(gate[i]), 12);
    });
  }

  it("gelu_tanh is torch's gelu(approximate='tanh')", () => {
    expect(geluTanh(1)).toBeCloseTo(0.8411920070648193, 7);
    expect(geluTanh(-2)).toBeCloseTo(-0.04540228843688965, 7);
  });

  it('residual: both inputs receive dout', () => {
    const rng = new Rng(500);
    const n = 11;
    const a = normals64(rng, n);
    const b = normals64(rng, n);
    const R = normals64(rng, n);
    const loss = () => {
      const out = new Float64Array(n);
      residualForward(out, a, b, n);
      return weightedSum(out, R);
    };
    const da = accumulated(normals64(rng, n), (buf) => residualBackward(buf, new Float64Array(n), R, n));
    const db = accumulated(normals64(rng, n), (buf) => residualBackward(new Float64Array(n), buf, R, n));
    checkGradient('residual da', a, da, loss, TOL);
    checkGradient('residual db', b, db, loss, TOL);
  });

  it('linear: dinp (through the frozen weight), dweight and dbias', () => {
    const rng = new Rng(600);
    const N = 4,
      IC = 7,
      OC = 5;
    const inp = normals64(rng, N * IC);
    const weight = normals64(rng, OC * IC, 0.4);
    const bias = normals64(rng, OC);
    const R = normals64(rng, N * OC);
    const loss = () => {
      const out = new Float64Array(N * OC);
      linearForward(out, inp, weight, bias, N, IC, OC);
      return weightedSum(out, R);
    };
    const dinp = accumulated(normals64(rng, N * IC), (b) => linearBackward(b, null, null, R, inp, weight, N, IC, OC));
    const dweight = accumulated(normals64(rng, OC * IC), (b) =>
      linearBackward(new Float64Array(N * IC), b, null, R, inp, weight, N, IC, OC),
    );
    const dbias = accumulated(normals64(rng, OC), (b) => linearBackward(new Float64Array(N * IC), null, b, R, inp, weight, N, IC, OC));
    checkGradient('linear dinp', inp, dinp, loss, TOL);
    checkGradient('linear dweight', weight, dweight, loss, TOL);
    checkGradient('linear dbias', bias, dbias, loss, TOL);
  });

  it('LoRA term: dinp, dA and dB of y += s (x A^T) B^T', () => {
    const rng = new Rng(700);
    const N = 3,
      IC = 6,
      OC = 5,
      r = 2,
      s = 1.75;
    const inp = normals64(rng, N * IC);
    const A = normals64(rng, r * IC, 0.4);
    const B = normals64(rng, OC * r, 0.4);
    const R = normals64(rng, N * OC);
    const loss = () => {
      const out = new Float64Array(N * OC);
      loraForward(out, inp, A, B, s, N, IC, OC, r);
      return weightedSum(out, R);
    };
    const grads = () => {
      const g = { dinp: normals64(rng, N * IC), dA: normals64(rng, r * IC), dB: normals64(rng, OC * r) };
      const init = { dinp: Float64Array.from(g.dinp), dA: Float64Array.from(g.dA), dB: Float64Array.from(g.dB) };
      loraBackward(g.dinp, g.dA, g.dB, R, inp, A, B, s, N, IC, OC, r);
      const minus = (x: Floats, y: Floats) => x.map((v, i) => v - y[i]);
      return { dinp: minus(g.dinp, init.dinp), dA: minus(g.dA, init.dA), dB: minus(g.dB, init.dB) };
    };
    const g = grads();
    checkGradient('lora dinp', inp, g.dinp, loss, TOL);
    checkGradient('lora dA', A, g.dA, loss, TOL);
    checkGradient('lora dB', B, g.dB, loss, TOL);
  });

  it('cross-entropy with per-token coefficients: dlogits = c (softmax - onehot); zero-coefficient rows untouched', () => {
    const rng = new Rng(800);
    const T = 4,
      V = 13;
    const logits = normals64(rng, T * V, 3);
    const targets = [3, 0, 12, 7];
    const coeffs = [0.5, -1.25, 0, 2];
    const loss = () => {
      const lp = new Float64Array(T);
      crossEntropyForward(lp, null, logits, targets, T, V);
      return -weightedSum(lp, coeffs);
    };
    const dlogits = accumulated(normals64(rng, T * V), (b) => crossEntropyBackward(b, logits, targets, coeffs, T, V));
    checkGradient('cross-entropy dlogits', logits, dlogits, loss, TOL);
    for (let v = 0; v < V; v++) expect(dlogits[2 * V + v]).toBe(0);
    // entropy of a uniform row is log V; logprob of the target is logit - logsumexp
    const lp = new Float64Array(1);
    const h = new Float64Array(1);
    crossEntropyForward(lp, h, new Float64Array(V).fill(0.3), [5], 1, V);
    expect(h[0]).toBeCloseTo(Math.log(V), 12);
    expect(lp[0]).toBeCloseTo(-Math.log(V), 12);
  });

  it('q/k/v preparation (Qwen3 per-head norm, then RoPE) of two rows: d of the QKV projection', () => {
    const rng = new Rng(900);
    const NH = 4,
      NKV = 2,
      HS = 6,
      eps = 1e-6;
    const W = (NH + 2 * NKV) * HS;
    const rows = [
      { seq: 0, pos: 7, adapter: NO_ADAPTER, count: 2 },
      { seq: 1, pos: 0, adapter: NO_ADAPTER, count: 1 },
    ];
    const T = 3;
    const invFreq = ropeInvFreq({ headDim: HS, ropeTheta: 10000, ropeScaling: null });
    const qkv = normals64(rng, T * W);
    const norm = {
      q: Float32Array.from({ length: HS }, () => 1 + 0.3 * rng.normal()),
      k: Float32Array.from({ length: HS }, () => 1 + 0.3 * rng.normal()),
      eps,
    };
    const Rq = normals64(rng, T * NH * HS);
    const Rk = normals64(rng, T * NKV * HS);
    const Rv = normals64(rng, T * NKV * HS);
    const positions = [7, 8, 0];
    const loss = () => {
      let L = 0;
      for (let t = 0; t < T; t++) {
        const p = qkv.subarray(t * W, (t + 1) * W);
        const qn = new Float64Array(NH * HS);
        const kn = new Float64Array(NKV * HS);
        rmsnormForward(qn, null, p.subarray(0, NH * HS), norm.q, NH, HS, eps);
        rmsnormForward(kn, null, p.subarray(NH * HS, (NH + NKV) * HS), norm.k, NKV, HS, eps);
        const q = new Float64Array(NH * HS);
        const k = new Float64Array(NKV * HS);
        ropeForward(q, qn, [positions[t]], invFreq, 1, NH, HS);
        ropeForward(k, kn, [positions[t]], invFreq, 1, NKV, HS);
        L += weightedSum(q, Rq.subarray(t * NH * HS)) + weightedSum(k, Rk.subarray(t * NKV * HS));
        L += weightedSum(p.subarray((NH + NKV) * HS), Rv.subarray(t * NKV * HS));
      }
      return L;
    };
    const dqkv = accumulated(normals64(rng, T * W), (b) => qkvPrepBackward(b, Rq, Rk, Rv, qkv, norm, invFreq, rows, NH, NKV, HS));
    checkGradient('qkv-prep dqkv', qkv, dqkv, loss, TOL);
  });
});
