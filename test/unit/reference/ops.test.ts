import { describe, expect, it } from 'vitest';
import { attentionForward } from '../../../src/engine/reference/attention';
import { embeddingForward } from '../../../src/engine/reference/embedding';
import { linearForward, matmulForward } from '../../../src/engine/reference/linear';
import { Rng } from '../../../src/engine/tensor/random';
import { rmsnormForward } from '../../../src/engine/reference/rmsnorm';
import { silu, swigluForward } from '../../../src/engine/reference/swiglu';

describe('reference ops on hand-computed cases', () => {
  it('rmsnorm of [1, 2, 3, 4] divides by sqrt(7.5 + eps) and scales by the weight', () => {
    const out = new Float32Array(4);
    const rstd = new Float32Array(1);
    rmsnormForward(out, rstd, new Float32Array([1, 2, 3, 4]), new Float32Array([1, 1, 2, 0.5]), 1, 4, 0.5);
    const r = 1 / Math.sqrt(7.5 + 0.5); // mean of squares = 30 / 4
    expect(rstd[0]).toBeCloseTo(r, 7);
    expect(Array.from(out)).toEqual([1 * r, 2 * r, 3 * r * 2, 4 * r * 0.5].map(Math.fround));
  });

  it('linear computes x W^T + b with W in nn.Linear layout [out, in]', () => {
    const out = new Float32Array(2 * 3);
    // x rows [1, 2], [0, -1]; W rows [1, 0], [0, 1], [1, 1]; b = [10, 20, 30]
    linearForward(out, new Float32Array([1, 2, 0, -1]), new Float32Array([1, 0, 0, 1, 1, 1]), new Float32Array([10, 20, 30]), 2, 2, 3);
    expect(Array.from(out)).toEqual([11, 22, 33, 10, 19, 29]);
  });

  it('matmul with transposes agrees with explicit transposition', () => {
    const rng = new Rng(4);
    const M = 3,
      N = 5,
      K = 4;
    const a = rng.normals(M * K);
    const b = rng.normals(K * N);
    const aT = new Float32Array(K * M);
    const bT = new Float32Array(N * K);
    for (let m = 0; m < M; m++) for (let k = 0; k < K; k++) aT[k * M + m] = a[m * K + k];
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) bT[n * K + k] = b[k * N + n];
    const plain = new Float32Array(M * N);
    const both = new Float32Array(M * N);
    matmulForward(plain, a, b, M, N, K);
    matmulForward(both, aT, bT, M, N, K, { transA: true, transB: true });
    expect(Array.from(both)).toEqual(Array.from(plain));
    // accumulate adds the product to what is there
    matmulForward(both, aT, bT, M, N, K, { transA: true, transB: true, accumulate: true });
    for (let i = 0; i < M * N; i++) expect(both[i]).toBeCloseTo(2 * plain[i], 5);
    // transB is the nn.Linear case
    const lin = new Float32Array(M * N);
    linearForward(lin, a, bT, null, M, K, N);
    expect(Array.from(lin)).toEqual(Array.from(plain));
  });

  it('silu and swiglu match their definitions', () => {
    expect(silu(0)).toBe(0);
    expect(silu(1)).toBeCloseTo(1 / (1 + Math.exp(-1)), 12);
    expect(silu(-20)).toBeCloseTo(0, 7);
    const out = new Float32Array(2);
    swigluForward(out, new Float32Array([1, -2]), new Float32Array([3, 4]), 1, 2);
    expect(out[0]).toBeCloseTo(3 * silu(1), 6);
    expect(out[1]).toBeCloseTo(4 * silu(-2), 6);
  });

  it('embedding copies rows and rejects ids outside the vocabulary', () => {
    const wte = new Float32Array([0, 1, 10, 11, 20, 21]);
    const out = new Float32Array(4);
    embeddingForward(out, [2, 0], wte, 2, 2, 3);
    expect(Array.from(out)).toEqual([20, 21, 0, 1]);
    expect(() => embeddingForward(out, [3], wte, 1, 2, 3)).toThrow(/token id 3 outside the vocabulary/);
  });
});

describe('reference attention', () => {
  it("with a single key returns that key's value", () => {
    const rng = new Rng(5);
    const HS = 8;
    const q = rng.normals(HS);
    const k = rng.normals(HS);
    const v = rng.normals(HS);
    const out = new Float32Array(HS);
    attentionForward(out, q, k, v, 1, 1, 1, 1, HS, 0);
    for (let d = 0; d < HS; d++) expect(out[d]).toBeCloseTo(v[d], 6);
  });

  it('with a zero query averages the visible values (causal)', () => {
    const HS = 2;
    const T = 3;
    const q = new Float32Array(T * HS);
    const k = new Rng(6).normals(T * HS);
    const v = new Float32Array([1, 0, 3, 0, 8, 6]);
    const out = new Float32Array(T * HS);
    attentionForward(out, q, k, v, T, T, 1, 1, HS, 0);
    expect(Array.from(out)).toEqual([1, 0, 2, 0, 4, 2]);
  });

  it('maps query heads to kv heads in groups (GQA) and honours pos0', () => {
    const rng = new Rng(7);
    const NH = 6,
      NKV = 2,
      HS = 4,
      S = 5,
      T = 2,
      pos0 = 3;
    const q = rng.normals(T * NH * HS);
    const k = rng.normals(S * NKV * HS);
    const v = rng.normals(S * NKV * HS);
    const out = new Float32Array(T * NH * HS);
    attentionForward(out, q, k, v, T, S, NH, NKV, HS, pos0);
    // Head 4 uses kv head 1; query 0 (position 3) sees keys 0..3: compare with one head, one kv head.
    const t = 0,
      h = 4;
    const q1 = q.slice((t * NH + h) * HS, (t * NH + h + 1) * HS);
    const k1 = new Float32Array(4 * HS);
    const v1 = new Float32Array(4 * HS);
    for (let s = 0; s < 4; s++) {
      k1.set(k.subarray((s * NKV + 1) * HS, (s * NKV + 2) * HS), s * HS);
      v1.set(v.subarray((s * NKV + 1) * HS, (s * NKV + 2) * HS), s * HS);
    }
    const one = new Float32Array(HS);
    attentionForward(one, q1, k1, v1, 1, 4, 1, 1, HS, 3);
    for (let d = 0; d < HS; d++) expect(out[(t * NH + h) * HS + d]).toBeCloseTo(one[d], 6);
  });

  it('refuses queries beyond the keys', () => {
    expect(() =>
      attentionForward(new Float32Array(4), new Float32Array(4), new Float32Array(4), new Float32Array(4), 1, 1, 1, 1, 4, 1),
    ).toThrow(/only 1 keys exist/);
  });
});
