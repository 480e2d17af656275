/**
 * The training backward of one micro-batch, layer by layer in exactly the reverse order of
 * graph-forward.ts, as KernelCalls. `dh` holds dL/d(residual) and is updated in place from
 * dL/dh[l + 1] to dL/dh[l]; the LoRA gradients are accumulated into LoraState.grads (split-K,
 * reduced in a fixed order: kernels/lora-grad.ts), the base weights are frozen (no dW).
 *
 * Per layer, undoing the forward (each step quotes the forward line it undoes):
 *   [recompute mode: re-run the layer's forward into the shared buffers]
 *   x = rmsnorm(hMid), act = silu(gate) * up        (recomputed, never saved)
 *   h[l+1] = hMid + act Wd^T + LoRA:   dAct = dh Wd (+ LoRA), dA_down, dB_down
 *   act = silu(gate) * up:             dGu = swiglu_backward(dAct, gu)
 *   gu = x Wgu^T + LoRA:               dx = dGu Wgu (+ LoRA), dA/dB gate, up
 *   x = rmsnorm(hMid):                 dh += rmsnorm_backward(dx)          (dh = dL/dhMid)
 *   hMid = h[l] + att Wo^T + LoRA:     dAtt = dh Wo (+ LoRA), dA_o, dB_o
 *   att = attention(q, k, v):          dq, dk, dv into dQkv's q | k | v columns
 *   q, k, v = qkv-prep(qkv):           dQkv = qkv_prep_backward(dQkv)      (RoPE, Qwen3 q/k-norm)
 *   x = rmsnorm(h[l]) (recomputed); qkv = x Wqkv^T + LoRA:  dx = dQkv Wqkv (+ LoRA), dA/dB q, k, v
 *   x = rmsnorm(h[l]):                 dh += rmsnorm_backward(dx)          (dh = dL/dh[l])
 *
 * Gemma's sandwich norms put one more step before each branch's Linear backward:
 *   h[l+1] = hMid + rmsnorm(downOut):  dBranch = rmsnorm_backward(dh), then dAct = dBranch Wd ...
 *   hMid = h[l] + rmsnorm(oOut):       dBranch = rmsnorm_backward(dh), then dAtt = dBranch Wo ...
 * LoRA of a group (y = x W^T + s (x A^T) B^T, u = x A^T saved, g = dL/dy):
 *   gB = s g B (per module, into its r columns),  dx += gB A (one GEMM over the stacked A),
 *   dA += gB^T x (one problem over the stacked A),  dB += s g^T u, stored from dB^T = s u^T g.
 * Not here: the head and dh's first value (graph-head.ts), clipping and AdamW (session.ts).
 */
import { qkvPrepWeights } from '../model/weights/kernel-args';
import { layerWindow } from '../model/config/attention-window';
import type { BufferRef, KernelCall } from '../gpu/kernel-call';
import type { LoraGradProblem } from '../kernels/lora-grad';
import { encodeLayerForward, layerOf, type MicroBatchDims, type TrainGraph } from './graph-forward';
import type { LoraGroupPlan } from './lora-plan';

/** The LoRA backward of one group: gradients into the state's grads, the input's gradient into dx. */
export function loraBackward(
  g: TrainGraph,
  group: LoraGroupPlan,
  dy: BufferRef,
  xIn: BufferRef,
  u: BufferRef,
  dx: BufferRef,
  T: number,
): KernelCall[] {
  const { k } = g;
  const r = g.lora.rank;
  const s = g.lora.scale;
  const params = g.state.params;
  const gB = g.buf.get('gB');
  const calls: KernelCall[] = [];
  // gB[:, aRow .. aRow + r) = s dy[:, col0 .. col0 + out) B_m   (B_m [out, r] is B(k = o, n = j))
  for (const m of group.modules) {
    calls.push(
      ...k.gemm.encode({
        out: gB,
        cOffset: m.aRow,
        ldc: group.rows,
        a: dy,
        aOffset: m.col0,
        lda: group.outWidth,
        M: T,
        N: r,
        K: m.out,
        b: { f32: params, offset: m.bOffset, ld: r, layout: 'rows-are-k' },
        alpha: s,
      }),
    );
  }
  // dx += gB [A_1; ..; A_n]   (the stacked A [n r, in] is B(k = row, n = i))
  calls.push(
    ...k.gemm.encode({
      out: dx,
      a: gB,
      lda: group.rows,
      M: T,
      N: group.in,
      K: group.rows,
      b: { f32: params, offset: group.aOffset, ld: group.in, layout: 'rows-are-k' },
      accumulate: true,
    }),
  );
  const part = g.buf.get('loraPart');
  const [dA, dB] = loraBackwardProblems(group, r, T, s);
  // dA_stack += gB^T x
  calls.push(...k.loraGrad.encode({ x: gB, y: xIn, out: g.state.grads, part, problems: dA }));
  // dB_m^T += s u_m^T dy_m, stored transposed into B_m [out, r]
  calls.push(...k.loraGrad.encode({ x: u, y: dy, out: g.state.grads, part, problems: dB }));
  return calls;
}

/**
 * The two LoRA-gradient problem sets of a group at T tokens, in the order loraBackward runs them:
 * dA_stack += gB^T x (into the stacked A), then dB_m^T += s u_m^T dy_m (stored transposed into each
 * B_m). The trainer also sizes its split-K scratch from them (LoraGrad.partFloats reads the shapes).
 */
export function loraBackwardProblems(group: LoraGroupPlan, r: number, T: number, s = 1): LoraGradProblem[][] {
  const dA = [
    {
      M: group.rows,
      N: group.in,
      K: T,
      xOffset: 0,
      ldx: group.rows,
      yOffset: 0,
      ldy: group.in,
      outOffset: group.aOffset,
      ldo: group.in,
      transposed: false,
      alpha: 1,
    },
  ];
  const dB = group.modules.map((m) => ({
    M: r,
    N: m.out,
    K: T,
    xOffset: m.aRow,
    ldx: group.rows,
    yOffset: m.col0,
    ldy: group.outWidth,
    outOffset: m.bOffset,
    ldo: r,
    transposed: true,
    alpha: s,
  }));
  return [dA, dB];
}

export function encodeLayerBackward(g: TrainGraph, l: number, d: MicroBatchDims): KernelCall[] {
  const { cfg, w, L, k, buf, C, F, NQ, QKV, eps, vectors } = layerOf(g, l);
  const { T } = d;
  const a = (name: Parameters<typeof buf.layer>[1]) => buf.layer(l, name);
  const h = buf.residual[l];
  const x = buf.get('x');
  const act = buf.get('act');
  const dh = buf.get('dh');
  const dx = buf.get('dx');
  const calls: KernelCall[] = [];

  if (buf.plan.mode === 'recompute') calls.push(...encodeLayerForward(g, l, d, { writeOutput: false }));
  calls.push(...k.rmsnorm.encode({ out: x, inp: a('hMid'), N: T, C, vectors, weightOffset: w.postNorm, eps }));
  calls.push(...k.swiglu.encode({ out: act, gateUp: a('gu'), T, F, act: cfg.hiddenAct }));
  // Gemma: out = rmsnorm(y, outNorm) added to the residual, so dL/dy = rmsnorm_backward(dh) (written, not accumulated).
  const branchGrad = (outNorm: number | null, y: 'oOut' | 'downOut', rstd: 'rstdO' | 'rstdD') => {
    if (outNorm === null) return dh;
    const dBranch = buf.get('dBranch');
    calls.push(
      ...k.rmsnormBackward.encode({
        dinp: dBranch,
        dout: dh,
        inp: a(y),
        rstd: a(rstd),
        vectors,
        weightOffset: outNorm,
        N: T,
        C,
        accumulate: false,
      }),
    );
    return dBranch;
  };

  // h[l+1] = hMid + act Wd^T (+ b) + LoRA   [Gemma: hMid + rmsnorm(downOut)]
  const dDown = branchGrad(w.mlpOutNorm, 'downOut', 'rstdD');
  const dAct = buf.get('dAct');
  calls.push(...k.gemm.encode({ out: dAct, a: dDown, b: { weight: w.down, layout: 'rows-are-k' }, M: T, N: F, K: C }));
  if (L.down) calls.push(...loraBackward(g, L.down, dDown, act, a('u.down'), dAct, T));
  // act = silu(gate) * up   [Gemma: gelu_tanh(gate) * up]
  const dGu = buf.get('dGu');
  calls.push(...k.swigluBackward.encode({ dgateUp: dGu, dact: dAct, gateUp: a('gu'), T, F, act: cfg.hiddenAct }));
  // gu = x Wgu^T (+ b) + LoRA
  calls.push(...k.gemm.encode({ out: dx, a: dGu, b: { weight: w.gateUp, layout: 'rows-are-k' }, M: T, N: C, K: 2 * F }));
  if (L.gateUp) calls.push(...loraBackward(g, L.gateUp, dGu, x, a('u.gateUp'), dx, T));
  // x = rmsnorm(hMid, post_attention_layernorm); hMid also flows straight on: dh += ...
  calls.push(
    ...k.rmsnormBackward.encode({ dinp: dh, dout: dx, inp: a('hMid'), rstd: a('rstd2'), vectors, weightOffset: w.postNorm, N: T, C }),
  );

  // hMid = h[l] + att Wo^T (+ b) + LoRA   [Gemma: h[l] + rmsnorm(oOut)]
  const dO = branchGrad(w.attnOutNorm, 'oOut', 'rstdO');
  const dAtt = buf.get('dAtt');
  calls.push(...k.gemm.encode({ out: dAtt, a: dO, b: { weight: w.o, layout: 'rows-are-k' }, M: T, N: NQ, K: C }));
  if (L.o) calls.push(...loraBackward(g, L.o, dO, a('att'), a('u.o'), dAtt, T));
  // att = attention(q, k, v); q, k, v = qkv-prep(qkv)
  const dQkv = buf.get('dQkv');
  const attnIo = { blockTable: buf.get('blockTable'), rows: buf.get('rows') };
  calls.push(
    ...k.attentionBackward.encode({
      dqkv: dQkv,
      stats: a('lse'),
      dout: dAtt,
      out: a('att'),
      q: a('q'),
      k: a('k'),
      v: a('v'),
      ...attnIo,
      T,
      B: d.B,
      maxCount: d.maxCount,
      maxBlocksPerSeq: buf.plan.maxBlocksPerSeq,
      window: layerWindow(cfg, l),
    }),
  );
  const pw = qkvPrepWeights(g.weights, l);
  calls.push(
    ...k.qkvPrepBackward.encode({
      dqkv: dQkv,
      qkv: cfg.qkNorm ? a('qkv') : undefined,
      qNorm: pw.qNorm,
      kNorm: pw.kNorm,
      ropeTable: pw.ropeTable,
      rope: pw.rope,
      rows: attnIo.rows,
      T,
      B: d.B,
    }),
  );
  // qkv = x Wqkv^T (+ b) + LoRA, x = rmsnorm(h[l]) recomputed
  calls.push(...k.rmsnorm.encode({ out: x, inp: h, N: T, C, vectors, weightOffset: w.inputNorm, eps }));
  calls.push(...k.gemm.encode({ out: dx, a: dQkv, b: { weight: w.qkv, layout: 'rows-are-k' }, M: T, N: C, K: QKV }));
  if (L.qkv) calls.push(...loraBackward(g, L.qkv, dQkv, x, a('u.qkv'), dx, T));
  // x = rmsnorm(h[l], input_layernorm); h[l] also flows straight on: dh += ...
  calls.push(...k.rmsnormBackward.encode({ dinp: dh, dout: dx, inp: h, rstd: a('rstd1'), vectors, weightOffset: w.inputNorm, N: T, C }));
  return calls;
}
