/** Residual connection, reference: out = a + b elementwise over n elements. */
import type { Floats } from './floats';

export function residualForward(
  out: Floats, // (n,)
  a: Floats, // (n,)
  b: Floats, // (n,)
  n: number,
): void {
  for (let i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/** Backward of residualForward, accumulating: out = a + b, so the gradient reaches both inputs unchanged. */
export function residualBackward(
  da: Floats, // (n,) accumulated
  db: Floats, // (n,) accumulated
  dout: Floats, // (n,)
  n: number,
): void {
  for (let i = 0; i < n; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}
