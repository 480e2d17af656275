/**
 * Causal grouped-query attention over contiguous K/V, reference (HF eager semantics in f32):
 * softmax(q k^T * HS^-0.5) v, query head h reading kv head h / (NH / NKV) (repeat_kv). Query t sits at
 * position pos0 + t and sees keys 0 .. pos0 + t. The oracle of the paged prefill and decode kernels.
 * Legend: T queries, S keys (S >= pos0 + T), NH query heads, NKV kv heads, HS head dim.
 */

export function attentionForward(
  out: Float32Array, // (T, NH, HS)
  q: Float32Array, // (T, NH, HS)
  k: Float32Array, // (S, NKV, HS)
  v: Float32Array, // (S, NKV, HS)
  T: number,
  S: number,
  NH: number,
  NKV: number,
  HS: number,
  pos0: number,
): void {
  if (NH % NKV !== 0) throw new Error(`attention: NH ${NH} is not a multiple of NKV ${NKV}`);
  if (pos0 + T > S) throw new Error(`attention: queries reach position ${pos0 + T - 1} but only ${S} keys exist`);
  const group = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  const scores = new Float64Array(S);
  for (let t = 0; t < T; t++) {
    const last = pos0 + t; // causal: keys 0..last
    for (let h = 0; h < NH; h++) {
      const kh = Math.floor(h / group);
      const qo = (t * NH + h) * HS;
      let max = -Infinity;
      for (let s = 0; s <= last; s++) {
        let dot = 0;
        const ko = (s * NKV + kh) * HS;
        for (let d = 0; d < HS; d++) dot += q[qo + d] * k[ko + d];
        scores[s] = dot * scale;
        if (scores[s] > max) max = scores[s];
      }
      let sum = 0;
      for (let s = 0; s <= last; s++) {
        scores[s] = Math.exp(scores[s] - max);
        sum += scores[s];
      }
      for (let d = 0; d < HS; d++) {
        let acc = 0;
        for (let s = 0; s <= last; s++) acc += scores[s] * v[(s * NKV + kh) * HS + d];
        out[qo + d] = acc / sum;
      }
    }
  }
}
