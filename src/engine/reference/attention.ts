/**
 * Causal grouped-query attention over contiguous K/V, reference (HF eager semantics in f32):
 * softmax(q k^T * HS^-0.5) v, query head h reading kv head h / (NH / NKV) (repeat_kv). Query t sits at
 * position pos0 + t and sees keys 0 .. pos0 + t, or with a sliding window W > 0 only keys
 * pos0 + t - W + 1 .. pos0 + t (model/attention-window.ts), and the log-sum-exp of those scores. The
 * oracle of the paged prefill and decode kernels.
 * Legend: T queries, S keys (S >= pos0 + T), NH query heads, NKV kv heads, HS head dim, W window (0 = full).
 */
import { firstVisibleKey } from '../model/attention-window';
import type { Floats } from './floats';

/** The dims both directions take, after the buffers: T queries, S keys, heads, head dim, first query position, window. */
type AttentionDims = [T: number, S: number, NH: number, NKV: number, HS: number, pos0: number, W?: number];

/** One query (t, h): its visible keys first..last, its kv head, its row offset in q, and the softmax scale. */
interface Query {
  first: number;
  last: number;
  kh: number;
  qo: number;
  scale: number;
}

/** Calls `each` for every query (t, h) in order, after checking the dims. */
function forEachQuery([T, S, NH, NKV, HS, pos0, W = 0]: AttentionDims, each: (query: Query) => void): void {
  if (NH % NKV !== 0) throw new Error(`attention: NH ${NH} is not a multiple of NKV ${NKV}`);
  if (pos0 + T > S) throw new Error(`attention: queries reach position ${pos0 + T - 1} but only ${S} keys exist`);
  const group = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  for (let t = 0; t < T; t++) {
    const last = pos0 + t; // causal: keys first..last
    const first = firstVisibleKey(last, W);
    for (let h = 0; h < NH; h++) each({ first, last, kh: Math.floor(h / group), qo: (t * NH + h) * HS, scale });
  }
}

/** p[s] = exp(q . k_s * scale - max) over the query's keys; returns the max score and the sum (the softmax's denominator). */
function expScores(
  p: Float64Array,
  q: Floats,
  k: Floats,
  NKV: number,
  HS: number,
  { first, last, kh, qo, scale }: Query,
): { max: number; sum: number } {
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
  return { max, sum };
}

export function attentionForward(
  out: Floats, // (T, NH, HS)
  q: Floats, // (T, NH, HS)
  k: Floats, // (S, NKV, HS)
  v: Floats, // (S, NKV, HS)
  ...dims: AttentionDims
): void {
  const [, S, , NKV, HS] = dims;
  const scores = new Float64Array(S);
  forEachQuery(dims, (query) => {
    const { first, last, kh, qo } = query;
    const { sum } = expScores(scores, q, k, NKV, HS, query);
    for (let d = 0; d < HS; d++) {
      let acc = 0;
      for (let s = first; s <= last; s++) acc += scores[s] * v[(s * NKV + kh) * HS + d];
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
  const [, S, , NKV, HS] = dims;
  const p = new Float64Array(S);
  const dp = new Float64Array(S);
  forEachQuery(dims, (query) => {
    const { first, last, kh, qo, scale } = query;
    const { sum } = expScores(p, q, k, NKV, HS, query);
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
  const [, S, , NKV, HS] = dims;
  const scores = new Float64Array(S);
  forEachQuery(dims, (query) => {
    const { max, sum } = expScores(scores, q, k, NKV, HS, query);
    lse[query.qo / HS] = max + Math.log(sum);
  });
}
