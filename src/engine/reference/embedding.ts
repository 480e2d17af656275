/**
 * Token embedding lookup, reference. Legend: T tokens, C channels, V vocab.
 * Not here: the GPU gather over row chunks (kernels/embedding.ts).
 */
import type { Floats } from './floats';

export function embeddingForward(
  out: Floats, // (T, C)
  tokens: ArrayLike<number>, // (T,)
  wte: Float32Array, // (V, C)
  T: number,
  C: number,
  V: number,
): void {
  for (let t = 0; t < T; t++) {
    const id = tokens[t];
    if (!(id >= 0 && id < V)) throw new Error(`token id ${id} outside the vocabulary [0, ${V})`);
    for (let c = 0; c < C; c++) out[t * C + c] = wte[id * C + c];
  }
}
