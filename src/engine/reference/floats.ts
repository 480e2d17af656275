/**
 * The array type the reference computes on: f32, as the GPU stores tensors, or f64, which the
 * finite-difference checks of the backward pass use (test/unit/reference/finite-diff*.test.ts) so
 * that rounding does not drown the derivative. Every reference op reads and writes either.
 */
export type Floats = Float32Array | Float64Array;
