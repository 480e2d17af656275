/** Residual connection, reference: out = a + b elementwise over n elements. */

export function residualForward(
  out: Float32Array, // (n,)
  a: Float32Array, // (n,)
  b: Float32Array, // (n,)
  n: number,
): void {
  for (let i = 0; i < n; i++) out[i] = a[i] + b[i];
}
