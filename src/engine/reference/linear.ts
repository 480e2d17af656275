/**
 * Matrix products, reference. `linearForward` is nn.Linear (weights [OC, IC], HF layout);
 * `matmulForward` is the general C = op(A) op(B) with transposes that the tiled GEMM and the trainer
 * (dX = dY W, dA = dH^T X) use. Plain loops, f64 accumulation: the oracle, not a fast path.
 */
import type { Floats } from './floats';

export function linearForward(
  out: Floats, // (N, OC)
  inp: Floats, // (N, IC)
  weight: Floats, // (OC, IC)
  bias: Floats | null, // (OC,)
  N: number,
  IC: number,
  OC: number,
): void {
  matmulForward(out, inp, weight, N, OC, IC, { transB: true, bias });
}

/**
 * Backward of linearForward, accumulating. The forward was out = inp W^T + b, so
 *   dinp += dout W,  dweight += dout^T inp,  dbias += sum over rows of dout.
 * Base weights are frozen in LoRA training: pass null for dweight and dbias (dinp alone is dX = dY W,
 * the GEMM of the backward through a frozen packed weight).
 */
export function linearBackward(
  dinp: Floats, // (N, IC) accumulated
  dweight: Floats | null, // (OC, IC) accumulated, or null
  dbias: Floats | null, // (OC,) accumulated, or null
  dout: Floats, // (N, OC)
  inp: Floats, // (N, IC)
  weight: Floats, // (OC, IC)
  N: number,
  IC: number,
  OC: number,
): void {
  matmulForward(dinp, dout, weight, N, IC, OC, { accumulate: true });
  if (dweight) matmulForward(dweight, dout, inp, OC, IC, N, { transA: true, accumulate: true });
  if (dbias) {
    for (let o = 0; o < OC; o++) {
      let acc = 0;
      for (let n = 0; n < N; n++) acc += dout[n * OC + o];
      dbias[o] += acc;
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
  bias?: Floats | null;
}

/** out (M, N) = op(A) (M, K) . op(B) (K, N) [+ bias] [+ out]. */
export function matmulForward(
  out: Floats, // (M, N)
  a: Floats, // (M, K), or (K, M) with transA
  b: Floats, // (K, N), or (N, K) with transB
  M: number,
  N: number,
  K: number,
  opts: MatmulOptions = {},
): void {
  // Element strides of op(A) (m, k) and op(B) (k, n) in their stored layouts.
  const [aM, aK] = opts.transA ? [1, M] : [K, 1];
  const [bK, bN] = opts.transB ? [1, K] : [N, 1];
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = opts.bias ? opts.bias[n] : 0;
      for (let k = 0; k < K; k++) acc += a[m * aM + k * aK] * b[k * bK + n * bN];
      out[m * N + n] = opts.accumulate ? out[m * N + n] + acc : acc;
    }
  }
}
