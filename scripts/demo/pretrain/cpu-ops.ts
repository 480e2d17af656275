/**
 * The dense operations of the demo's CPU pretraining stage, written for speed in plain
 * TypeScript (row-major Float32Arrays, contiguous inner loops, four rows per pass so each weight
 * row is loaded once per four activation rows). Forward and backward are neighbours; backward
 * functions accumulate into their gradients.
 *
 * Not here: the model (cpu-llama.ts). The GPU engine's kernels are Hearth's real training path;
 * this exists only to pretrain the bundled model's base weights, which LoRA keeps frozen.
 */

/** y (T, N) = x (T, K) W^T, W (N, K). */
export function matmulWT(y: Float32Array, x: Float32Array, W: Float32Array, T: number, K: number, N: number): void {
  let t = 0;
  for (; t + 4 <= T; t += 4) {
    const x0 = t * K,
      x1 = x0 + K,
      x2 = x1 + K,
      x3 = x2 + K;
    for (let n = 0; n < N; n++) {
      const w = n * K;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      for (let k = 0; k < K; k++) {
        const wk = W[w + k];
        s0 += x[x0 + k] * wk;
        s1 += x[x1 + k] * wk;
        s2 += x[x2 + k] * wk;
        s3 += x[x3 + k] * wk;
      }
      y[t * N + n] = s0;
      y[(t + 1) * N + n] = s1;
      y[(t + 2) * N + n] = s2;
      y[(t + 3) * N + n] = s3;
    }
  }
  for (; t < T; t++) {
    const x0 = t * K;
    for (let n = 0; n < N; n++) {
      const w = n * K;
      let s = 0;
      for (let k = 0; k < K; k++) s += x[x0 + k] * W[w + k];
      y[t * N + n] = s;
    }
  }
}

/** out (R, S) = a^T: a transposed copy, so the backward products are contiguous dot products too. */
export function transpose(out: Float32Array, a: Float32Array, S: number, R: number): Float32Array {
  for (let s = 0; s < S; s++) for (let r = 0; r < R; r++) out[r * S + s] = a[s * R + r];
  return out;
}

/** y (T, N) += x (T, K) W^T: matmulWT accumulating. */
function matmulWTAccumulate(y: Float32Array, x: Float32Array, W: Float32Array, T: number, K: number, N: number): void {
  const tmp = new Float32Array(T * N);
  matmulWT(tmp, x, W, T, K, N);
  for (let i = 0; i < tmp.length; i++) y[i] += tmp[i];
}

/** In the forward: y = x W^T, so dx (T, K) += dy (T, N) W = dy (W^T)^T. */
export function matmulWTBackwardX(dx: Float32Array, dy: Float32Array, W: Float32Array, T: number, K: number, N: number): void {
  matmulWTAccumulate(dx, dy, transpose(new Float32Array(K * N), W, N, K), T, N, K);
}

/** In the forward: y = x W^T, so dW (N, K) += dy^T (N, T) x (T, K) = dy^T (x^T)^T. */
export function matmulWTBackwardW(dW: Float32Array, dy: Float32Array, x: Float32Array, T: number, K: number, N: number): void {
  matmulWTAccumulate(dW, transpose(new Float32Array(N * T), dy, T, N), transpose(new Float32Array(K * T), x, T, K), N, T, K);
}

/** y = x / rms(x) * w per row; rstd (T) saved for the backward. */
export function rmsnormForward(
  y: Float32Array,
  rstd: Float32Array,
  x: Float32Array,
  w: Float32Array,
  T: number,
  C: number,
  eps: number,
): void {
  for (let t = 0; t < T; t++) {
    const o = t * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x[o + c] * x[o + c];
    const r = 1 / Math.sqrt(ss / C + eps);
    rstd[t] = r;
    for (let c = 0; c < C; c++) y[o + c] = x[o + c] * r * w[c];
  }
}

/** In the forward: y = x r w with r = 1/rms(x); dx += r (w dy - xhat mean(xhat w dy)), dw += dy xhat. */
export function rmsnormBackward(
  dx: Float32Array,
  dw: Float32Array,
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array,
  rstd: Float32Array,
  T: number,
  C: number,
): void {
  for (let t = 0; t < T; t++) {
    const o = t * C;
    const r = rstd[t];
    let dot = 0;
    for (let c = 0; c < C; c++) {
      const xhat = x[o + c] * r;
      dot += dy[o + c] * w[c] * xhat;
      dw[c] += dy[o + c] * xhat;
    }
    dot /= C;
    for (let c = 0; c < C; c++) dx[o + c] += r * (dy[o + c] * w[c] - x[o + c] * r * dot);
  }
}

/** HF rotate_half RoPE in place on heads of size HS: pairs (i, i + HS/2) rotated by pos * invFreq[i]. */
export function ropeForward(x: Float32Array, pos: Int32Array, invFreq: Float32Array, T: number, H: number, HS: number, sign = 1): void {
  const half = HS / 2;
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const a = pos[t] * invFreq[i];
      const cos = Math.cos(a);
      const sin = sign * Math.sin(a);
      for (let h = 0; h < H; h++) {
        const o = (t * H + h) * HS;
        const x1 = x[o + i];
        const x2 = x[o + i + half];
        x[o + i] = x1 * cos - x2 * sin;
        x[o + i + half] = x2 * cos + x1 * sin;
      }
    }
  }
}

/** The rotation is orthogonal: its backward is the rotation by -angle, in place on the gradient. */
export function ropeBackward(dx: Float32Array, pos: Int32Array, invFreq: Float32Array, T: number, H: number, HS: number): void {
  ropeForward(dx, pos, invFreq, T, H, HS, -1);
}

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}
