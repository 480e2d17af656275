/**
 * The whole-model training pass of Llama / Qwen2 / Qwen3 / Gemma 3 with LoRA, reference: a forward over one
 * sequence (positions 0 .. T-1) that keeps every activation the backward needs, and the backward
 * that calls the layers' backward functions in exactly the reverse order of the forward, returning
 * the LoRA gradients and d(embedding output). Plain loops in f32 or f64 (the finite-difference
 * checks use f64); the oracle of the GPU trainer (engine/train).
 *
 * The forward is ReferenceSession.append's (reference/model.ts) plus LoRA on any subset of q, k, v,
 * o, gate, up and down projections, y = x W^T (+ b) + s (x A^T) B^T: with no adapter it gives the
 * same logits (tested). The loss enters as dlogits; `lossAndGradients` builds them from per-position
 * coefficients (reference/cross-entropy.ts), which covers SFT and every RL loss.
 * Gemma 3 (reference/model.ts): scaled embeddings, sandwich norms on the o_proj and down_proj outputs
 * (their inputs and rstd kept), GeGLU, the sliding layers' own RoPE base, q scaled so that the
 * attention's HS^-1/2 gives query_pre_attn_scalar^-1/2.
 *
 * Not here: the loss coefficients (engine/train), several sequences (call once per sequence: the
 * backward accumulates), gradients of base weights (frozen).
 */
import { layerWindow } from '../model/config/attention-window';
import { layerUsesRope } from '../model/config/rope';
import { attentionBackward, attentionForward } from './attention';
import { crossEntropyBackward, crossEntropyForward } from './cross-entropy';
import { embeddingForward } from './embedding';
import type { Floats } from './floats';
import { linearBackward, linearForward, matmulForward } from './linear';
import { loraBackward, loraBackwardSplit, loraForwardSplit, type ReferenceLora } from './lora';
import { type LoraModule } from '../model/lora/peft-modules';
import { dimsOf, type ReferenceModel } from './model';
import { residualBackward, residualForward } from './residual';
import { rmsnormBackward, rmsnormForward } from './rmsnorm';
import { ropeBackward, ropeForward } from './rope';
import { mlpActivationBackward, mlpActivationForward } from './swiglu';

export type Precision = 'f32' | 'f64';

/** What one layer's forward saved for its backward (shapes per sequence of T tokens). */
interface LayerActs {
  hIn: Floats; // (T, C) residual entering the layer
  x1: Floats; // (T, C) input_layernorm(hIn)
  rstd1: Floats; // (T,)
  q0: Floats; // (T, NH, HS) q projection (+ bias, + LoRA), before q_norm / RoPE
  k0: Floats; // (T, NKV, HS)
  v: Floats; // (T, NKV, HS)
  qn: Floats; // (T, NH, HS) after Qwen3 q_norm (= q0 without it)
  kn: Floats; // (T, NKV, HS)
  rstdQ: Floats | null; // (T * NH,) Qwen3 only
  rstdK: Floats | null; // (T * NKV,)
  q: Floats; // (T, NH, HS) after RoPE
  k: Floats; // (T, NKV, HS)
  att: Floats; // (T, NH * HS) attention output, input of o_proj
  hMid: Floats; // (T, C) residual after attention
  x2: Floats; // (T, C) post_attention_layernorm(hMid)
  rstd2: Floats; // (T,)
  gate: Floats; // (T, F)
  up: Floats; // (T, F)
  act: Floats; // (T, F) silu(gate) * up, input of down_proj
  oOut: Floats | null; // (T, C) Gemma: o_proj's output before post_attention_layernorm
  rstdO: Floats | null; // (T,)
  downOut: Floats | null; // (T, C) Gemma: down_proj's output before post_feedforward_layernorm
  rstdD: Floats | null; // (T,)
}

/** Everything a training forward saved, and its logits. */
export interface TrainActivations {
  T: number;
  layers: LayerActs[];
  hFinal: Floats; // (T, C) residual after the last layer
  xFinal: Floats; // (T, C) final norm
  rstdFinal: Floats; // (T,)
  logits: Floats; // (T, V)
}

type Layer = ReferenceModel['layers'][number];

function alloc(precision: Precision, n: number): Floats {
  return precision === 'f64' ? new Float64Array(n) : new Float32Array(n);
}

/** Where a projection sits, after its buffers: the adapter, layer l, module, T rows, IC inputs, OC outputs. */
type ProjSite = [...FusedSite, OC: number];

/** A fused module's site: the adapter, layer l, module, T rows, IC inputs (its outputs are the parts' widths). */
type FusedSite = [lora: ReferenceLora | null, l: number, module: LoraModule, T: number, IC: number];

/**
 * y = x W^T (+ b) (+ s (x A^T) B^T when the adapter targets `module` in layer l). The LoRA term is
 * built from plain matmuls here, not through lora.ts's loraForward, so the comparison of this
 * forward with ReferenceModel's (which uses loraForward) checks both.
 */
function projForward(y: Floats, x: Floats, W: Floats, bias: Floats | null, ...[lora, l, module, T, IC, OC]: ProjSite): void {
  linearForward(y, x, W, bias, T, IC, OC);
  const pair = lora?.get(l, module);
  if (!lora || !pair) return;
  const r = lora.rank;
  const u = new Float64Array(T * r);
  matmulForward(u, x, pair.A, T, r, IC, { transB: true }); // u = x A^T
  const delta = new Float64Array(T * OC);
  matmulForward(delta, u, pair.B, T, OC, r, { transB: true }); // u B^T
  for (let i = 0; i < T * OC; i++) y[i] += lora.scale * delta[i];
}

/** Backward of projForward: dx += dy W (+ the LoRA term), and the adapter's dA, dB into `grads`. */
function projBackward(
  dx: Floats,
  dy: Floats,
  x: Floats,
  W: Floats,
  grads: ReferenceLora | null,
  ...[lora, l, module, T, IC, OC]: ProjSite
): void {
  linearBackward(dx, null, null, dy, x, W, T, IC, OC);
  const pair = lora?.get(l, module);
  if (lora && pair) {
    const g = gradientOf(grads, l, module);
    loraBackward(dx, g.A, g.B, dy, x, pair.A, pair.B, lora.scale, T, IC, OC, lora.rank);
  }
}

/** The gradient accumulator of an adapted module (it must have one). */
function gradientOf(grads: ReferenceLora | null, l: number, module: LoraModule) {
  const g = grads?.get(l, module);
  if (!g) throw new Error(`LoRA backward: the gradient has no ${module} of layer ${l}`);
  return g;
}

/** A fused module's LoRA (Phi-3 qkv_proj / gate_up_proj) over the separate outputs it spans, when adapted. */
function fusedForward(ys: Floats[], widths: number[], x: Floats, ...[lora, l, module, T, IC]: FusedSite) {
  const pair = lora?.get(l, module);
  if (lora && pair) loraForwardSplit(ys, widths, x, pair.A, pair.B, lora.scale, T, IC, lora.rank);
}

function fusedBackward(
  dx: Floats,
  dys: Floats[],
  widths: number[],
  x: Floats,
  grads: ReferenceLora | null,
  ...[lora, l, module, T, IC]: FusedSite
) {
  const pair = lora?.get(l, module);
  if (!lora || !pair) return;
  const g = gradientOf(grads, l, module);
  loraBackwardSplit(dx, g.A, g.B, dys, widths, x, pair.A, pair.B, lora.scale, T, IC, lora.rank);
}

/** RoPE on a NoPE layer (SmolLM3): no rotated dims, every dim passes through. */
const NO_ROPE = new Float32Array(0);

/** The training forward of one sequence at positions 0 .. T-1, keeping the activations. */
export function trainForward(
  model: ReferenceModel,
  lora: ReferenceLora | null,
  tokens: readonly number[],
  precision: Precision = 'f32',
): TrainActivations {
  const cfg = model.config;
  const T = tokens.length;
  const { C, NH, NKV, HS, F, V, eps } = dimsOf(cfg);
  const a = (n: number) => alloc(precision, n);
  const positions = Array.from({ length: T }, (_, t) => t);

  let h = a(T * C);
  embeddingForward(h, tokens, model.wte, T, C, V);
  if (model.embeddingScale !== 1) for (let i = 0; i < T * C; i++) h[i] *= model.embeddingScale;
  const qScale = cfg.attentionScale === undefined ? 1 : cfg.attentionScale * Math.sqrt(HS);
  // Gemma: a branch output y becomes rmsnorm(y, outNorm) before the residual add; its input and rstd are kept.
  const branchNorm = (y: Floats, outNorm: Floats | null): [Floats, Floats | null, Floats | null] => {
    if (!outNorm) return [y, null, null];
    const normed = a(T * C);
    const rstd = a(T);
    rmsnormForward(normed, rstd, y, outNorm, T, C, eps);
    return [normed, y, rstd];
  };
  const layers: LayerActs[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const w: Layer = model.layers[l];
    const s: LayerActs = {
      hIn: h,
      x1: a(T * C),
      rstd1: a(T),
      q0: a(T * NH * HS),
      k0: a(T * NKV * HS),
      v: a(T * NKV * HS),
      qn: a(T * NH * HS),
      kn: a(T * NKV * HS),
      rstdQ: w.qNorm ? a(T * NH) : null,
      rstdK: w.kNorm ? a(T * NKV) : null,
      q: a(T * NH * HS),
      k: a(T * NKV * HS),
      att: a(T * NH * HS),
      hMid: a(T * C),
      x2: a(T * C),
      rstd2: a(T),
      gate: a(T * F),
      up: a(T * F),
      act: a(T * F),
      oOut: null,
      rstdO: null,
      downOut: null,
      rstdD: null,
    };
    rmsnormForward(s.x1, s.rstd1, s.hIn, w.inputNorm, T, C, eps);
    projForward(s.q0, s.x1, w.q, w.qBias, lora, l, 'q_proj', T, C, NH * HS);
    projForward(s.k0, s.x1, w.k, w.kBias, lora, l, 'k_proj', T, C, NKV * HS);
    projForward(s.v, s.x1, w.v, w.vBias, lora, l, 'v_proj', T, C, NKV * HS);
    fusedForward([s.q0, s.k0, s.v], [NH * HS, NKV * HS, NKV * HS], s.x1, lora, l, 'qkv_proj', T, C);
    if (w.qNorm && w.kNorm) {
      rmsnormForward(s.qn, s.rstdQ, s.q0, w.qNorm, T * NH, HS, eps);
      rmsnormForward(s.kn, s.rstdK, s.k0, w.kNorm, T * NKV, HS, eps);
    } else {
      s.qn.set(s.q0);
      s.kn.set(s.k0);
    }
    const freqs = layerUsesRope(cfg, l) ? model.layerInvFreq[l] : NO_ROPE;
    ropeForward(s.q, s.qn, positions, freqs, T, NH, HS);
    ropeForward(s.k, s.kn, positions, freqs, T, NKV, HS);
    if (qScale !== 1) for (let i = 0; i < s.q.length; i++) s.q[i] *= qScale;
    attentionForward(s.att, s.q, s.k, s.v, T, T, NH, NKV, HS, 0, layerWindow(cfg, l));
    const proj = a(T * C);
    projForward(proj, s.att, w.o, w.oBias, lora, l, 'o_proj', T, NH * HS, C);
    const [attnOut, oOut, rstdO] = branchNorm(proj, w.attnOutNorm);
    [s.oOut, s.rstdO] = [oOut, rstdO];
    residualForward(s.hMid, s.hIn, attnOut, T * C);
    rmsnormForward(s.x2, s.rstd2, s.hMid, w.postNorm, T, C, eps);
    projForward(s.gate, s.x2, w.gate, w.gateBias, lora, l, 'gate_proj', T, C, F);
    projForward(s.up, s.x2, w.up, w.upBias, lora, l, 'up_proj', T, C, F);
    fusedForward([s.gate, s.up], [F, F], s.x2, lora, l, 'gate_up_proj', T, C);
    mlpActivationForward(cfg.hiddenAct, s.act, s.gate, s.up, T, F);
    const down = a(T * C);
    projForward(down, s.act, w.down, w.downBias, lora, l, 'down_proj', T, F, C);
    const [mlpOut, downOut, rstdD] = branchNorm(down, w.mlpOutNorm);
    [s.downOut, s.rstdD] = [downOut, rstdD];
    const hOut = a(T * C);
    residualForward(hOut, s.hMid, mlpOut, T * C);
    layers.push(s);
    h = hOut;
  }
  const xFinal = a(T * C);
  const rstdFinal = a(T);
  rmsnormForward(xFinal, rstdFinal, h, model.finalNorm, T, C, eps);
  const logits = a(T * V);
  linearForward(logits, xFinal, model.lmHead, null, T, C, V);
  return { T, layers, hFinal: h, xFinal, rstdFinal, logits };
}

/**
 * The backward of trainForward, layers in exact reverse order. Accumulates the LoRA gradients into
 * `grads` (shaped like `lora`: `zeroReferenceLora(lora)`) and returns d(embedding output) (T, C); the
 * embedding itself is frozen, so the pass stops there.
 */
export function trainBackward(
  model: ReferenceModel,
  lora: ReferenceLora | null,
  grads: ReferenceLora | null,
  acts: TrainActivations,
  dlogits: Floats,
): Floats {
  const cfg = model.config;
  const { T } = acts;
  const { C, NH, NKV, HS, F, V } = dimsOf(cfg);
  const precision: Precision = acts.logits instanceof Float64Array ? 'f64' : 'f32';
  const a = (n: number) => alloc(precision, n);
  const positions = Array.from({ length: T }, (_, t) => t);

  // logits = xFinal E^T; xFinal = rmsnorm(hFinal, norm)
  const dxFinal = a(T * C);
  linearBackward(dxFinal, null, null, dlogits, acts.xFinal, model.lmHead, T, C, V);
  let dh = a(T * C);
  rmsnormBackward(dh, null, dxFinal, acts.hFinal, model.finalNorm, acts.rstdFinal, T, C);
  const qScale = cfg.attentionScale === undefined ? 1 : cfg.attentionScale * Math.sqrt(HS);
  // Gemma: out = rmsnorm(y, outNorm), so dy = rmsnorm_backward(dout); without the norm dy = dout.
  const branchNormBackward = (dout: Floats, y: Floats | null, outNorm: Floats | null, rstd: Floats | null): Floats => {
    if (!outNorm || !y || !rstd) return dout;
    const dy = a(T * C);
    rmsnormBackward(dy, null, dout, y, outNorm, rstd, T, C);
    return dy;
  };

  for (let l = cfg.numLayers - 1; l >= 0; l--) {
    const w: Layer = model.layers[l];
    const s = acts.layers[l];
    // hOut = hMid + down
    const dhMid = a(T * C);
    const ddown = a(T * C);
    residualBackward(dhMid, ddown, dh, T * C);
    // [Gemma: rmsnorm(downOut, post_feedforward_layernorm)] down = act Wd^T (+ LoRA)
    const dact = a(T * F);
    projBackward(dact, branchNormBackward(ddown, s.downOut, w.mlpOutNorm, s.rstdD), s.act, w.down, grads, lora, l, 'down_proj', T, F, C);
    // act = silu(gate) * up  [Gemma: gelu_tanh(gate) * up]
    const dgate = a(T * F);
    const dup = a(T * F);
    mlpActivationBackward(cfg.hiddenAct, dgate, dup, dact, s.gate, s.up, T, F);
    // gate = x2 Wg^T, up = x2 Wu^T (+ LoRA); reverse order: up, then gate
    const dx2 = a(T * C);
    fusedBackward(dx2, [dgate, dup], [F, F], s.x2, grads, lora, l, 'gate_up_proj', T, C);
    projBackward(dx2, dup, s.x2, w.up, grads, lora, l, 'up_proj', T, C, F);
    projBackward(dx2, dgate, s.x2, w.gate, grads, lora, l, 'gate_proj', T, C, F);
    // x2 = rmsnorm(hMid, post_attention_layernorm)
    rmsnormBackward(dhMid, null, dx2, s.hMid, w.postNorm, s.rstd2, T, C);
    // hMid = hIn + proj
    const dhIn = a(T * C);
    const dproj = a(T * C);
    residualBackward(dhIn, dproj, dhMid, T * C);
    // proj = att Wo^T (+ LoRA)
    const datt = a(T * NH * HS);
    projBackward(datt, branchNormBackward(dproj, s.oOut, w.attnOutNorm, s.rstdO), s.att, w.o, grads, lora, l, 'o_proj', T, NH * HS, C);
    // att = attention(q, k, v)
    const dq = a(T * NH * HS);
    const dk = a(T * NKV * HS);
    const dv = a(T * NKV * HS);
    attentionBackward(dq, dk, dv, datt, s.q, s.k, s.v, T, T, NH, NKV, HS, 0, layerWindow(cfg, l));
    // [Gemma: q *= qScale] q = rope(qn), k = rope(kn)
    if (qScale !== 1) for (let i = 0; i < dq.length; i++) dq[i] *= qScale;
    const dqn = a(T * NH * HS);
    const dkn = a(T * NKV * HS);
    const freqs = layerUsesRope(cfg, l) ? model.layerInvFreq[l] : NO_ROPE;
    ropeBackward(dkn, dk, positions, freqs, T, NKV, HS);
    ropeBackward(dqn, dq, positions, freqs, T, NH, HS);
    // Qwen3: qn = rmsnorm(q0, q_norm) per head, kn likewise
    let dq0 = dqn;
    let dk0 = dkn;
    if (w.qNorm && w.kNorm && s.rstdQ && s.rstdK) {
      dk0 = a(T * NKV * HS);
      dq0 = a(T * NH * HS);
      rmsnormBackward(dk0, null, dkn, s.k0, w.kNorm, s.rstdK, T * NKV, HS);
      rmsnormBackward(dq0, null, dqn, s.q0, w.qNorm, s.rstdQ, T * NH, HS);
    }
    // q0, k0, v = x1 W^T (+ b, + LoRA); reverse order: v, k, q
    const dx1 = a(T * C);
    fusedBackward(dx1, [dq0, dk0, dv], [NH * HS, NKV * HS, NKV * HS], s.x1, grads, lora, l, 'qkv_proj', T, C);
    projBackward(dx1, dv, s.x1, w.v, grads, lora, l, 'v_proj', T, C, NKV * HS);
    projBackward(dx1, dk0, s.x1, w.k, grads, lora, l, 'k_proj', T, C, NKV * HS);
    projBackward(dx1, dq0, s.x1, w.q, grads, lora, l, 'q_proj', T, C, NH * HS);
    // x1 = rmsnorm(hIn, input_layernorm)
    rmsnormBackward(dhIn, null, dx1, s.hIn, w.inputNorm, s.rstd1, T, C);
    dh = dhIn;
  }
  return dh;
}

export interface LossAndGradients {
  /** sum_t coeffs[t] * -logprob_t. */
  loss: number;
  /** logprobs[t]: log p(tokens[t + 1] | tokens[..t]); the last position has none (0). */
  logprobs: Floats;
  /** Entropy of each position's next-token distribution. */
  entropy: Floats;
  /** Shaped like the adapter; null without an adapter. */
  grads: ReferenceLora | null;
  /** d loss / d(embedding output), (T, C). */
  dEmbedding: Floats;
  logits: Floats;
}

/**
 * Forward, loss L = sum_t coeffs[t] * -log p(tokens[t + 1] | tokens[..t]) and backward for one
 * sequence. coeffs has one entry per position (T); the last position predicts nothing and must be 0.
 */
export function lossAndGradients(
  model: ReferenceModel,
  lora: ReferenceLora | null,
  tokens: readonly number[],
  coeffs: ArrayLike<number>,
  precision: Precision = 'f32',
): LossAndGradients {
  const T = tokens.length;
  const V = model.config.vocabSize;
  if (coeffs.length !== T) throw new Error(`lossAndGradients: ${coeffs.length} coefficients for ${T} positions`);
  if (coeffs[T - 1] !== 0) throw new Error('lossAndGradients: the last position predicts no token; its coefficient must be 0');
  const acts = trainForward(model, lora, tokens, precision);
  const targets = Array.from({ length: T }, (_, t) => (t + 1 < T ? tokens[t + 1] : 0));
  const logprobs = alloc(precision, T);
  const entropy = alloc(precision, T);
  crossEntropyForward(logprobs.subarray(0, T - 1), entropy.subarray(0, T - 1), acts.logits, targets, T - 1, V);
  let loss = 0;
  for (let t = 0; t < T - 1; t++) loss -= coeffs[t] * logprobs[t];
  const dlogits = alloc(precision, T * V);
  crossEntropyBackward(dlogits, acts.logits, targets, coeffs, T, V);
  const grads = lora ? lora.zerosLike(precision) : null;
  const dEmbedding = trainBackward(model, lora, grads, acts, dlogits);
  return { loss, logprobs, entropy, grads, dEmbedding, logits: acts.logits };
}
