/**
 * The training head of one micro-batch: the final RMSNorm of every row, then, a chunk of rows at a
 * time (the plan's headRows: the logits of a whole micro-batch, T x V floats, would not fit one
 * binding for real vocabularies), logits = xFinal E^T and the fused cross-entropy: each row's
 * target logprob and entropy into `stats`. With `grad` the same pass turns the chunk's logits into
 * dlogits = c (softmax - onehot) in place and projects them back, dxFinal[rows] = dlogits E (the
 * GEMM through the frozen lm_head / tied embedding, row chunks of E accumulated along K), and
 * after the last chunk the final norm's backward starts the residual gradient:
 *   dh = rmsnorm_backward(dxFinal)          (written, not accumulated: the step's first gradient)
 *
 * Why recompute logits in the backward rather than keep them: they are the largest activation
 * (V floats per token) and cost one GEMM to redo.
 * Not here: the coefficients c (loss.ts, uploaded into `coef`), the layers (graph-forward.ts).
 */
import type { KernelCall } from '../gpu/kernel-call';
import type { MicroBatchDims, TrainGraph } from './graph-forward';

/** stats layout: logprob of row t at t, entropy at STATS_ENTROPY(plan) + t. */
export function entropyOffset(g: TrainGraph): number {
  return g.buf.plan.tokens;
}

export function encodeFinalNorm(g: TrainGraph, d: MicroBatchDims): KernelCall[] {
  const cfg = g.weights.config;
  return g.k.rmsnorm.encode({
    out: g.buf.get('xFinal'),
    inp: g.buf.get('hFinal'),
    N: d.T,
    C: cfg.hiddenSize,
    vectors: g.weights.vectors,
    weightOffset: g.weights.finalNorm,
    eps: cfg.rmsNormEps,
    rstd: g.buf.get('rstdFinal'),
  });
}

export function encodeHead(g: TrainGraph, d: MicroBatchDims, grad: boolean): KernelCall[] {
  const cfg = g.weights.config;
  const C = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const { k, buf } = g;
  const logits = buf.get('logits');
  const xFinal = buf.get('xFinal');
  const dx = buf.get('dx');
  const calls: KernelCall[] = [];
  for (let r0 = 0; r0 < d.T; r0 += buf.plan.headRows) {
    const R = Math.min(buf.plan.headRows, d.T - r0);
    calls.push(
      ...k.gemm.encode({
        out: logits,
        a: xFinal,
        aOffset: r0 * C,
        M: R,
        N: V,
        K: C,
        b: { weight: g.weights.lmHead, layout: 'rows-are-n' },
      }),
    );
    calls.push(
      ...k.crossEntropy.encode({
        logits,
        R,
        V,
        targets: buf.get('targets'),
        row0: r0,
        coef: grad ? buf.get('coef') : undefined,
        stats: buf.get('stats'),
        lpOffset: 0,
        entOffset: entropyOffset(g),
      }),
    );
    if (grad) {
      // dxFinal[r0 .. r0 + R) = dlogits E: E stored [V, C] is B(k = v, n = c), rows along K.
      calls.push(
        ...k.gemm.encode({ out: dx, cOffset: r0 * C, a: logits, M: R, N: C, K: V, b: { weight: g.weights.lmHead, layout: 'rows-are-k' } }),
      );
    }
  }
  if (grad) {
    calls.push(
      ...k.rmsnormBackward.encode({
        dinp: buf.get('dh'),
        dout: dx,
        inp: buf.get('hFinal'),
        rstd: buf.get('rstdFinal'),
        vectors: g.weights.vectors,
        weightOffset: g.weights.finalNorm,
        N: d.T,
        C,
        accumulate: false,
      }),
    );
  }
  return calls;
}
