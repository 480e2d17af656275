/**
 * The whole-model forward of Llama / Qwen2 / Qwen3, reference: plain TypeScript over f32 weights
 * decoded from any file dtype, written for clarity. It is the oracle of the GPU engine: logits of
 * every position, and an incremental session (a contiguous KV cache) so greedy decoding can be
 * compared token by token.
 *
 * Per layer (HF modeling_llama / qwen2 / qwen3 / phi3 / smollm3):
 *   x = rmsnorm(h, input_layernorm); q, k, v = x Wq^T (+b), x Wk^T (+b), x Wv^T (+b)
 *   [Qwen3] q, k = rmsnorm per head (q_norm, k_norm); q, k = rope(q, k) (the first rotaryDim dims
 *   of a head [Phi-3]; not on SmolLM3's NoPE layers); append k, v to the cache
 *   h += attention(q, K, V) Wo^T (+b)
 *   x = rmsnorm(h, post_attention_layernorm); h += (silu(x Wg^T) * (x Wu^T)) Wd^T
 * then logits = rmsnorm(h, norm) E^T (E = lm_head, or the embedding when tied).
 *
 * Gemma 3 (transformers modeling_gemma3.py, Gemma3DecoderLayer; llama.cpp src/models/gemma3.cpp):
 *   h = embed * sqrt(C) (the normaliser in f32, model/weights/vector-values.ts embeddingScaleOf); every norm is x * (1 + w);
 *   h += rmsnorm(attention(...) Wo^T, post_attention_layernorm)
 *   x = rmsnorm(h, pre_feedforward_layernorm); h += rmsnorm((gelu_tanh(x Wg^T) * (x Wu^T)) Wd^T, post_feedforward_layernorm)
 *   the scores are scaled by query_pre_attn_scalar^-1/2, and sliding layers rotate with rope_local_base_freq.
 *
 * LoRA (optional, per session): an adapter (reference/lora.ts) adds s (x A^T) B^T to the output of each
 * adapted projection, right after the frozen Linear (before q/k-norm and RoPE for q and k). Phi-3
 * stores q|k|v and gate|up fused: the reference splits the fused weights by rows, and a fused LoRA
 * module's update (one A, B over the whole fused output) is split the same way.
 *
 * Not here: the backward pass (the trainer adds it), sampling (reference/sampler.ts).
 */
import type { ModelConfig } from '../model/config/model-config';
import { tensorToF32 } from '../tensor/tensor-data';
import { layerRopeParams, layerUsesRope, ropeFreqs, type RopeFreqs } from '../model/config/rope';
import type { TensorData } from '../tensor/tensor-data';
import { checkAgainstPlan, EMBED_NAME, FINAL_NORM_NAME, layerNames, LM_HEAD_NAME } from '../model/weights/parameter-plan';
import { embeddingScaleOf } from '../model/weights/vector-values';
import { layerWindow } from '../model/config/attention-window';
import { attentionForward } from './attention';
import { embeddingForward } from './embedding';
import { linearForward } from './linear';
import { loraForward, loraForwardSplit, type ReferenceLora } from './lora';
import { type LoraModule } from '../model/lora/peft-modules';
import { rmsnormForward } from './rmsnorm';
import { ropeForward } from './rope';
import { mlpActivationForward } from './swiglu';

/** One layer's weights in f32 (shapes as in the HF file). */
interface LayerWeights {
  inputNorm: Float32Array; // (C,)
  q: Float32Array; // (NH*HS, C)
  k: Float32Array; // (NKV*HS, C)
  v: Float32Array; // (NKV*HS, C)
  qBias: Float32Array | null;
  kBias: Float32Array | null;
  vBias: Float32Array | null;
  qNorm: Float32Array | null; // (HS,)
  kNorm: Float32Array | null; // (HS,)
  o: Float32Array; // (C, NH*HS)
  oBias: Float32Array | null;
  postNorm: Float32Array; // (C,) the norm before the MLP (Gemma: pre_feedforward_layernorm)
  attnOutNorm: Float32Array | null; // (C,) Gemma: post_attention_layernorm on the attention output
  mlpOutNorm: Float32Array | null; // (C,) Gemma: post_feedforward_layernorm on the MLP output
  gate: Float32Array; // (F, C)
  up: Float32Array; // (F, C)
  down: Float32Array; // (C, F)
  gateBias: Float32Array | null;
  upBias: Float32Array | null;
  downBias: Float32Array | null;
}

/** Intermediate activations of the last `append`, by name (`layers.<l>.<what>`), for debugging kernels. */
export type Trace = Map<string, Float32Array>;

/** The sizes both reference models (inference here, training in model-train.ts) read off a config, by their math names. */
export function dimsOf(cfg: ModelConfig) {
  return {
    C: cfg.hiddenSize,
    NH: cfg.numHeads,
    NKV: cfg.numKvHeads,
    HS: cfg.headDim,
    F: cfg.intermediateSize,
    V: cfg.vocabSize,
    eps: cfg.rmsNormEps,
  };
}

export class ReferenceModel {
  readonly wte: Float32Array; // (V, C)
  readonly lmHead: Float32Array; // (V, C)
  readonly finalNorm: Float32Array; // (C,)
  readonly layers: LayerWeights[] = [];
  readonly invFreq: RopeFreqs; // (R/2,) per position
  readonly layerInvFreq: RopeFreqs[]; // per layer: invFreq, or Gemma's sliding layers' own base
  readonly embeddingScale: number;

  constructor(
    readonly config: ModelConfig,
    tensors: Iterable<TensorData>,
  ) {
    const byName = new Map<string, TensorData>();
    for (const t of tensors) byName.set(t.name, t);
    const problem = checkAgainstPlan(config, byName.values());
    if (problem) throw new Error(`ReferenceModel: ${problem}`);
    const get = (name: string) => tensorToF32(byName.get(name)!);
    const opt = (name: string, present: boolean) => (present ? get(name) : null);
    // Gemma3RMSNorm: x * (1.0 + weight.float()), the sum in f32.
    const offset = config.normWeightOffset ?? 0;
    const norm = (name: string) => get(name).map((w) => Math.fround(offset + w));
    const optNorm = (name: string, present: boolean) => (present ? norm(name) : null);
    this.wte = get(EMBED_NAME);
    this.embeddingScale = embeddingScaleOf(config);
    this.lmHead = config.tieWordEmbeddings ? this.wte : get(LM_HEAD_NAME);
    this.finalNorm = norm(FINAL_NORM_NAME);
    const qRows = config.numHeads * config.headDim;
    const kvRows = config.numKvHeads * config.headDim;
    const C = config.hiddenSize;
    const F = config.intermediateSize;
    for (let l = 0; l < config.numLayers; l++) {
      const n = layerNames(l);
      // Row blocks of a fused checkpoint's qkv_proj / gate_up_proj, or the separate tensors.
      const qkv = config.fusedProjections ? get(n.qkv) : null;
      const gateUp = config.fusedProjections ? get(n.gateUp) : null;
      this.layers.push({
        inputNorm: norm(n.inputNorm),
        q: qkv ? qkv.subarray(0, qRows * C) : get(n.q),
        k: qkv ? qkv.subarray(qRows * C, (qRows + kvRows) * C) : get(n.k),
        v: qkv ? qkv.subarray((qRows + kvRows) * C) : get(n.v),
        qBias: opt(n.qBias, config.attentionBias),
        kBias: opt(n.kBias, config.attentionBias),
        vBias: opt(n.vBias, config.attentionBias),
        qNorm: optNorm(n.qNorm, config.qkNorm),
        kNorm: optNorm(n.kNorm, config.qkNorm),
        o: get(n.o),
        oBias: opt(n.oBias, config.outputBias),
        postNorm: norm(config.sandwichNorms ? n.preFfnNorm : n.postNorm),
        attnOutNorm: optNorm(n.postNorm, !!config.sandwichNorms),
        mlpOutNorm: optNorm(n.postFfnNorm, !!config.sandwichNorms),
        gate: gateUp ? gateUp.subarray(0, F * C) : get(n.gate),
        up: gateUp ? gateUp.subarray(F * C) : get(n.up),
        down: get(n.down),
        gateBias: opt(n.gateBias, config.mlpBias),
        upBias: opt(n.upBias, config.mlpBias),
        downBias: opt(n.downBias, config.mlpBias),
      });
    }
    this.invFreq = ropeFreqs(config);
    this.layerInvFreq = Array.from({ length: config.numLayers }, (_, l) => ropeFreqs(layerRopeParams(config, l)));
  }

  /** Logits (T, V) of every position of `tokens`, from an empty cache, with an optional LoRA adapter. */
  forward(tokens: readonly number[], trace?: Trace, lora: ReferenceLora | null = null): Float32Array {
    return this.session(lora).append(tokens, trace);
  }

  session(lora: ReferenceLora | null = null): ReferenceSession {
    return new ReferenceSession(this, lora);
  }
}

/** Greedy decoding: `steps` new tokens after `prompt` (argmax, lowest id on ties). */
export function greedyDecode(model: ReferenceModel, prompt: readonly number[], steps: number): number[] {
  const session = model.session();
  const V = model.config.vocabSize;
  let logits = session.append(prompt);
  let last = logits.subarray((prompt.length - 1) * V);
  const out: number[] = [];
  for (let s = 0; s < steps; s++) {
    let best = 0;
    for (let i = 1; i < V; i++) if (last[i] > last[best]) best = i;
    out.push(best);
    if (s + 1 < steps) {
      logits = session.append([best]);
      last = logits;
    }
  }
  return out;
}

/** A sequence being decoded: the reference's KV cache, contiguous per layer (S, NKV, HS). */
export class ReferenceSession {
  private k: Float32Array[];
  private v: Float32Array[];
  private len = 0;

  constructor(
    readonly model: ReferenceModel,
    /** The adapter applied to every token of this sequence, or null for the base model. */
    readonly lora: ReferenceLora | null = null,
  ) {
    const kv = model.config.numKvHeads * model.config.headDim;
    this.k = model.layers.map(() => new Float32Array(16 * kv));
    this.v = model.layers.map(() => new Float32Array(16 * kv));
  }

  /** Tokens processed so far (the position of the next token). */
  get length(): number {
    return this.len;
  }

  /** Layer l's keys (after q/k-norm and RoPE) and values, (length, NKV, HS). */
  keys(l: number): Float32Array {
    return this.k[l].subarray(0, this.len * this.model.config.numKvHeads * this.model.config.headDim);
  }

  values(l: number): Float32Array {
    return this.v[l].subarray(0, this.len * this.model.config.numKvHeads * this.model.config.headDim);
  }

  /** Runs `tokens` at positions length .. length+T-1 and returns their logits (T, V). */
  append(tokens: readonly number[], trace?: Trace): Float32Array {
    const cfg = this.model.config;
    const T = tokens.length;
    const { C, NH, NKV, HS, F, V, eps } = dimsOf(cfg);
    const pos0 = this.len;
    const S = pos0 + T;
    this.reserve(S);
    const positions = Array.from({ length: T }, (_, t) => pos0 + t);
    const save = (name: string, a: Float32Array) => trace?.set(name, Float32Array.from(a));
    // out (T, OC) += s (inp A^T) B^T when the adapter has this module in layer l.
    const adapt = (l: number, m: LoraModule, out: Float32Array, inp: Float32Array, IC: number, OC: number) => {
      const w = this.lora?.get(l, m);
      if (w) loraForward(out, inp, w.A, w.B, this.lora!.scale, T, IC, OC, this.lora!.rank);
    };
    // A fused module's update (Phi-3), split over the separate outputs.
    const adaptFused = (l: number, m: LoraModule, inp: Float32Array, IC: number, outs: Float32Array[], widths: number[]) => {
      const w = this.lora?.get(l, m);
      if (w) loraForwardSplit(outs, widths, inp, w.A, w.B, this.lora!.scale, T, IC, this.lora!.rank);
    };

    const h = new Float32Array(T * C); // residual stream
    embeddingForward(h, tokens, this.model.wte, T, C, V);
    if (this.model.embeddingScale !== 1) for (let i = 0; i < T * C; i++) h[i] *= this.model.embeddingScale;
    save('embedding', h);
    const x = new Float32Array(T * C);
    const q = new Float32Array(T * NH * HS);
    const k = new Float32Array(T * NKV * HS);
    const v = new Float32Array(T * NKV * HS);
    const att = new Float32Array(T * NH * HS);
    const proj = new Float32Array(T * C);
    const gate = new Float32Array(T * F);
    const up = new Float32Array(T * F);
    const act = new Float32Array(T * F);

    for (let l = 0; l < cfg.numLayers; l++) {
      const w = this.model.layers[l];
      rmsnormForward(x, null, h, w.inputNorm, T, C, eps);
      linearForward(q, x, w.q, w.qBias, T, C, NH * HS);
      linearForward(k, x, w.k, w.kBias, T, C, NKV * HS);
      linearForward(v, x, w.v, w.vBias, T, C, NKV * HS);
      adapt(l, 'q_proj', q, x, C, NH * HS);
      adapt(l, 'k_proj', k, x, C, NKV * HS);
      adapt(l, 'v_proj', v, x, C, NKV * HS);
      adaptFused(l, 'qkv_proj', x, C, [q, k, v], [NH * HS, NKV * HS, NKV * HS]);
      if (w.qNorm && w.kNorm) {
        // Qwen3: RMSNorm over each head's HS values, before RoPE.
        rmsnormForward(q, null, q, w.qNorm, T * NH, HS, eps);
        rmsnormForward(k, null, k, w.kNorm, T * NKV, HS, eps);
      }
      if (layerUsesRope(cfg, l)) {
        ropeForward(q, q, positions, this.model.layerInvFreq[l], T, NH, HS);
        ropeForward(k, k, positions, this.model.layerInvFreq[l], T, NKV, HS);
      }
      // Gemma: scores * query_pre_attn_scalar^-1/2 where attentionForward applies HS^-1/2.
      if (cfg.attentionScale !== undefined) for (let i = 0; i < q.length; i++) q[i] *= cfg.attentionScale * Math.sqrt(HS);
      this.k[l].set(k, pos0 * NKV * HS);
      this.v[l].set(v, pos0 * NKV * HS);
      save(`layers.${l}.q`, q);
      save(`layers.${l}.k`, k);
      save(`layers.${l}.v`, v);
      attentionForward(att, q, this.k[l], this.v[l], T, S, NH, NKV, HS, pos0, layerWindow(cfg, l));
      save(`layers.${l}.attention`, att);
      linearForward(proj, att, w.o, w.oBias, T, NH * HS, C);
      adapt(l, 'o_proj', proj, att, NH * HS, C);
      if (w.attnOutNorm) rmsnormForward(proj, null, proj, w.attnOutNorm, T, C, eps);
      for (let i = 0; i < T * C; i++) h[i] += proj[i];
      save(`layers.${l}.residual_attn`, h);
      rmsnormForward(x, null, h, w.postNorm, T, C, eps);
      linearForward(gate, x, w.gate, w.gateBias, T, C, F);
      linearForward(up, x, w.up, w.upBias, T, C, F);
      adapt(l, 'gate_proj', gate, x, C, F);
      adapt(l, 'up_proj', up, x, C, F);
      adaptFused(l, 'gate_up_proj', x, C, [gate, up], [F, F]);
      mlpActivationForward(cfg.hiddenAct, act, gate, up, T, F);
      save(`layers.${l}.mlp_act`, act);
      linearForward(proj, act, w.down, w.downBias, T, F, C);
      adapt(l, 'down_proj', proj, act, F, C);
      if (w.mlpOutNorm) rmsnormForward(proj, null, proj, w.mlpOutNorm, T, C, eps);
      for (let i = 0; i < T * C; i++) h[i] += proj[i];
      save(`layers.${l}.residual`, h);
    }
    rmsnormForward(x, null, h, this.model.finalNorm, T, C, eps);
    save('final_norm', x);
    const logits = new Float32Array(T * V);
    linearForward(logits, x, this.model.lmHead, null, T, C, V);
    this.len = S;
    return logits;
  }

  /** Grows the contiguous caches to hold `S` positions. */
  private reserve(S: number): void {
    const kv = this.model.config.numKvHeads * this.model.config.headDim;
    if (this.k[0] && this.k[0].length >= S * kv) return;
    const cap = Math.max(S, (2 * (this.k[0]?.length ?? 0)) / kv);
    const grow = (a: Float32Array) => {
      const b = new Float32Array(cap * kv);
      b.set(a);
      return b;
    };
    this.k = this.k.map(grow);
    this.v = this.v.map(grow);
  }
}
