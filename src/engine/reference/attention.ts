/**
 * Causal grouped-query attention over contiguous K/V, reference (HF eager semantics in f32):
 * softmax(q k^T * HS^-0.5) v, query head h reading kv head h / (NH / NKV) (repeat_kv). Query t sits at
 * position pos0 + t and sees keys 0 .. pos0 + t, or with a sliding window W > 0 only keys
 * pos0 + t - W + 1 .. pos0 + t (model/config/attention-window.ts), and the log-sum-exp of those scores. The
 * oracle of the paged prefill and decode kernels.
 * Legend: T queries, S keys (S >= pos0 + T), NH query heads, NKV kv heads, HS head dim, W window (0 = full).
 */
import { firstVisibleKey } from '../model/config/attention-window';
import type { Floats } from './floats';

/** The dims both directions take, after the buffers: T queries, S keys, heads, head dim, first query position, window. */
type AttentionDims = [T: number, S: number, NH: number, NKV: number, HS: number, pos0: number, W?: number];

/**
 * One query (t, h) and its scores: keys first..last visible, its row offset in q (qo) and the row
 * offset of its kv head in k and v for key s ((s * NKV + kh) * HS), the softmax scale, and
 * p[s] = exp(q . k_s * scale - max) with their max and sum (the softmax's denominator).
 */
interface Query {
  first: number;
  last: number;
  qo: number;
  kh: number;
  NKV: number;
  HS: number;
  scale: number;
  p: Float64Array;
  max: number;
  sum: number;
}

/** Calls `each` for every query (t, h) in order with its exponentiated scores, after checking the dims. */
function forEachSoftmax(q: Floats, k: Floats, [T, S, NH, NKV, HS, pos0, W = 0]: AttentionDims, each: (query: Query) => void): void {
  if (NH % NKV !== 0) throw new Error(`attention: NH ${NH} is not a multiple of NKV ${NKV}`);
  if (pos0 + T > S) throw new Error(`attention: queries reach position ${pos0 + T - 1} but only ${S} keys exist`);
  const group = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  const p = new Float64Array(S);
  for (let t = 0; t < T; t++) {
    const last = pos0 + t; // causal: keys first..last
    const first = firstVisibleKey(last, W);
    for (let h = 0; h < NH; h++) {
      const kh = Math.floor(h / group);
      const qo = (t * NH + h) * HS;
      let max = -Infinity;
      for (let s = first; s <= last; s++) {
        let dot = 0;
        const ko = (s * NKV + kh) * HS;
        for (let d = 0; d < HS; d++) dot += q[qo + d] * k[ko + d];
        p[s] = dot * scale;
        if (p[s] > max) max = p[s];
      }
      let sum = 0;
      for (let s = first; s <= last; s++) {
        p[s] = Math.exp(p[s] - max);
        sum += p[s];
      }
      each({ first, last, qo, kh, NKV, HS, scale, p, max, sum });
    }
  }
}

export function attentionForward(
  out: Floats, // (T, NH, HS)
  q: Floats, // (T, NH, HS)
  k: Floats, // (S, NKV, HS)
  v: Floats, // (S, NKV, HS)
  ...dims: AttentionDims
): void {
  forEachSoftmax(q, k, dims, ({ first, last, qo, kh, NKV, HS, p, sum }) => {
    for (let d = 0; d < HS; d++) {
      let acc = 0;
      for (let s = first; s <= last; s++) acc += p[s] * v[(s * NKV + kh) * HS + d];
      out[qo + d] = acc / sum;
    }
  });
}

/**
 * Backward of attentionForward, accumulating; the scores and their softmax are recomputed (the
 * forward saves nothing). Per query (t, h) with p_s = softmax_s(q . k_s * scale), the forward was
 *   out = sum_s p_s v_s
 * so dv_s += p_s dout; dp_s = dout . v_s; the softmax backward gives
 *   ds_s = p_s (dp_s - sum_j p_j dp_j)   (sum_j p_j dp_j = dout . out: FlashAttention-2's D)
 * and through s = q . k_s * scale: dq += scale * ds_s k_s, dk_s += scale * ds_s q.
 * GQA: kv head h / G receives the sum over its G query heads (repeat_kv's backward).
 * Keys 0 .. pos0 - 1 (a cached prefix) get gradients like any other key; keys outside a query's
 * window get none from it.
 */
export function attentionBackward(
  dq: Floats, // (T, NH, HS) accumulated
  dk: Floats, // (S, NKV, HS) accumulated
  dv: Floats, // (S, NKV, HS) accumulated
  dout: Floats, // (T, NH, HS)
  q: Floats, // (T, NH, HS)
  k: Floats, // (S, NKV, HS)
  v: Floats, // (S, NKV, HS)
  ...dims: AttentionDims
): void {
  const dp = new Float64Array(dims[1]);
  forEachSoftmax(q, k, dims, ({ first, last, qo, kh, NKV, HS, scale, p, sum }) => {
    let D = 0;
    for (let s = first; s <= last; s++) {
      p[s] /= sum;
      const vo = (s * NKV + kh) * HS;
      let dot = 0;
      for (let d = 0; d < HS; d++) {
        dot += dout[qo + d] * v[vo + d];
        dv[vo + d] += p[s] * dout[qo + d];
      }
      dp[s] = dot;
      D += p[s] * dot;
    }
    for (let s = first; s <= last; s++) {
      const ds = p[s] * (dp[s] - D) * scale;
      const ko = (s * NKV + kh) * HS;
      for (let d = 0; d < HS; d++) {
        dq[qo + d] += ds * k[ko + d];
        dk[ko + d] += ds * q[qo + d];
      }
    }
  });
}

/**
 * lse[t, h] = log sum_s exp(q[t, h] . k_s * scale) over the keys the query sees: the log of the
 * softmax denominator, what a FlashAttention-2 backward needs.
 */
export function attentionLogsumexp(
  lse: Floats, // (T, NH)
  q: Floats, // (T, NH, HS)
  k: Floats, // (S, NKV, HS)
  ...dims: AttentionDims
): void {
  forEachSoftmax(q, k, dims, ({ qo, HS, max, sum }) => (lse[qo / HS] = max + Math.log(sum)));
}
