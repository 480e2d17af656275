/**
 * Matrix products, reference. `linearForward` is nn.Linear (weights [OC, IC], HF layout);
 * `matmulForward` is the general C = op(A) op(B) with transposes that the tiled GEMM and the trainer
 * (dX = dY W, dA = dH^T X) use. Plain loops, f64 accumulation: the oracle, not a fast path.
 */

export function linearForward(
  out: Float32Array, // (N, OC)
  inp: Float32Array, // (N, IC)
  weight: Float32Array, // (OC, IC)
  bias: Float32Array | null, // (OC,)
  N: number,
  IC: number,
  OC: number,
): void {
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < OC; o++) {
      let acc = bias ? bias[o] : 0;
      for (let i = 0; i < IC; i++) acc += inp[n * IC + i] * weight[o * IC + i];
      out[n * OC + o] = acc;
    }
  }
}

export interface MatmulOptions {
  /** A is stored (K, M) instead of (M, K). */
  transA?: boolean;
  /** B is stored (N, K) instead of (K, N): the nn.Linear case Y = X W^T. */
  transB?: boolean;
  /** out += product instead of out = product. */
  accumulate?: boolean;
  /** Added to every row: (N,). */
  bias?: Float32Array | null;
}

/** out (M, N) = op(A) (M, K) . op(B) (K, N) [+ bias] [+ out]. */
export function matmulForward(
  out: Float32Array, // (M, N)
  a: Float32Array, // (M, K), or (K, M) with transA
  b: Float32Array, // (K, N), or (N, K) with transB
  M: number,
  N: number,
  K: number,
  opts: MatmulOptions = {},
): void {
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = opts.bias ? opts.bias[n] : 0;
      for (let k = 0; k < K; k++) {
        const av = opts.transA ? a[k * M + m] : a[m * K + k];
        const bv = opts.transB ? b[n * K + k] : b[k * N + n];
        acc += av * bv;
      }
      out[m * N + n] = opts.accumulate ? out[m * N + n] + acc : acc;
    }
  }
}
