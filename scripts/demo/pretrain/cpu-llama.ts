/**
 * A full-parameter Llama trainer on the CPU for the demo's pretraining stage (docs/training.md):
 * forward over a batch of packed sequences (each attends only to itself), cross-entropy on the
 * trained tokens only, backward into every weight (embedding included, tied with lm_head), and
 * AdamW. Llama only (tiny-chat's architecture: no biases, no q/k norm), f32 throughout.
 *
 * Why it exists: tiny-chat ships with random weights, and LoRA on frozen random weights learns
 * little. This stage gives the base model its first skill; everything after it (SFT and RL
 * through Hearth's API, LoRA on the GPU engine) is the real product path.
 * Not here: data (scripts/train-demo-pretrain.ts), the GPU trainer (src/engine/train).
 */
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { tensorFromF32, tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import {
  matmulWT,
  matmulWTBackwardW,
  matmulWTBackwardX,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  silu,
} from './cpu-ops';

export interface TrainSequence {
  tokens: readonly number[];
  /** trainable[i] = 1: token i is a target, predicted from tokens < i. */
  trainable: ArrayLike<number>;
}

const layerKeys = [
  'input_layernorm',
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'post_attention_layernorm',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;
type LayerKey = (typeof layerKeys)[number];

function layerName(l: number, key: LayerKey): string {
  const path = key.endsWith('layernorm') ? key : ['gate_proj', 'up_proj', 'down_proj'].includes(key) ? `mlp.${key}` : `self_attn.${key}`;
  return `model.layers.${l}.${path}.weight`;
}

export class CpuLlama {
  readonly params = new Map<string, Float32Array>();
  readonly grads = new Map<string, Float32Array>();
  private readonly shapes = new Map<string, number[]>();
  private readonly m = new Map<string, Float32Array>();
  private readonly v = new Map<string, Float32Array>();
  private step = 0;
  private readonly invFreq: Float32Array;

  constructor(
    readonly cfg: ModelConfig,
    tensors: readonly TensorData[],
  ) {
    if (cfg.arch !== 'llama' || cfg.attentionBias || cfg.mlpBias || cfg.qkNorm || !cfg.tieWordEmbeddings) {
      throw new Error('CpuLlama trains tied-embedding Llama models without biases (tiny-chat).');
    }
    for (const t of tensors) {
      this.params.set(t.name, tensorToF32(t));
      this.shapes.set(t.name, [...t.shape]);
      this.grads.set(t.name, new Float32Array(this.params.get(t.name)!.length));
      this.m.set(t.name, new Float32Array(this.params.get(t.name)!.length));
      this.v.set(t.name, new Float32Array(this.params.get(t.name)!.length));
    }
    const HS = cfg.headDim;
    this.invFreq = Float32Array.from({ length: HS / 2 }, (_, i) => 1 / cfg.ropeTheta ** ((2 * i) / HS));
  }

  private p(name: string): Float32Array {
    const v = this.params.get(name);
    if (!v) throw new Error(`CpuLlama: missing ${name}`);
    return v;
  }

  private g(name: string): Float32Array {
    return this.grads.get(name)!;
  }

  zeroGrad(): void {
    for (const g of this.grads.values()) g.fill(0);
  }

  /**
   * Forward and backward over `batch`; gradients of the mean cross-entropy over all trained
   * tokens accumulate into `grads`. Returns that mean and the number of trained tokens.
   */
  lossAndBackward(batch: readonly TrainSequence[]): { loss: number; targets: number } {
    const {
      hiddenSize: C,
      numHeads: NH,
      numKvHeads: NKV,
      headDim: HS,
      intermediateSize: F,
      vocabSize: V,
      numLayers: L,
      rmsNormEps: eps,
    } = this.cfg;
    const QD = NH * HS;
    const KD = NKV * HS;
    const T = batch.reduce((n, s) => n + s.tokens.length, 0);
    const tokens = new Int32Array(T);
    const pos = new Int32Array(T);
    const seqs: { start: number; len: number }[] = [];
    const rows: number[] = []; // positions whose next token is a target
    let o = 0;
    for (const s of batch) {
      seqs.push({ start: o, len: s.tokens.length });
      s.tokens.forEach((id, i) => {
        tokens[o + i] = id;
        pos[o + i] = i;
        if (i > 0 && s.trainable[i]) rows.push(o + i - 1);
      });
      o += s.tokens.length;
    }
    const E = this.p('model.embed_tokens.weight');
    let h = new Float32Array(T * C);
    for (let t = 0; t < T; t++) h.set(E.subarray(tokens[t] * C, tokens[t] * C + C), t * C);

    type Saved = {
      hIn: Float32Array;
      x1: Float32Array;
      r1: Float32Array;
      q: Float32Array;
      k: Float32Array;
      v: Float32Array;
      probs: Float32Array[];
      att: Float32Array;
      hMid: Float32Array;
      x2: Float32Array;
      r2: Float32Array;
      gate: Float32Array;
      up: Float32Array;
      act: Float32Array;
    };
    const saved: Saved[] = [];
    const G = NH / NKV;
    const scale = 1 / Math.sqrt(HS);
    for (let l = 0; l < L; l++) {
      const s: Saved = {
        hIn: h,
        x1: new Float32Array(T * C),
        r1: new Float32Array(T),
        q: new Float32Array(T * QD),
        k: new Float32Array(T * KD),
        v: new Float32Array(T * KD),
        probs: [],
        att: new Float32Array(T * QD),
        hMid: new Float32Array(T * C),
        x2: new Float32Array(T * C),
        r2: new Float32Array(T),
        gate: new Float32Array(T * F),
        up: new Float32Array(T * F),
        act: new Float32Array(T * F),
      };
      rmsnormForward(s.x1, s.r1, h, this.p(layerName(l, 'input_layernorm')), T, C, eps);
      matmulWT(s.q, s.x1, this.p(layerName(l, 'q_proj')), T, C, QD);
      matmulWT(s.k, s.x1, this.p(layerName(l, 'k_proj')), T, C, KD);
      matmulWT(s.v, s.x1, this.p(layerName(l, 'v_proj')), T, C, KD);
      ropeForward(s.q, pos, this.invFreq, T, NH, HS);
      ropeForward(s.k, pos, this.invFreq, T, NKV, HS);
      for (const { start, len } of seqs) {
        for (let hd = 0; hd < NH; hd++) {
          const kv = Math.floor(hd / G);
          const P = new Float32Array(len * len);
          for (let i = 0; i < len; i++) {
            const qo = (start + i) * QD + hd * HS;
            let max = -Infinity;
            for (let j = 0; j <= i; j++) {
              const ko = (start + j) * KD + kv * HS;
              let dot = 0;
              for (let d = 0; d < HS; d++) dot += s.q[qo + d] * s.k[ko + d];
              P[i * len + j] = dot * scale;
              if (P[i * len + j] > max) max = P[i * len + j];
            }
            let sum = 0;
            for (let j = 0; j <= i; j++) sum += P[i * len + j] = Math.exp(P[i * len + j] - max);
            for (let j = 0; j <= i; j++) {
              const p = (P[i * len + j] /= sum);
              const vo = (start + j) * KD + kv * HS;
              for (let d = 0; d < HS; d++) s.att[qo + d] += p * s.v[vo + d];
            }
          }
          s.probs.push(P);
        }
      }
      const proj = new Float32Array(T * C);
      matmulWT(proj, s.att, this.p(layerName(l, 'o_proj')), T, QD, C);
      for (let i = 0; i < T * C; i++) s.hMid[i] = h[i] + proj[i];
      rmsnormForward(s.x2, s.r2, s.hMid, this.p(layerName(l, 'post_attention_layernorm')), T, C, eps);
      matmulWT(s.gate, s.x2, this.p(layerName(l, 'gate_proj')), T, C, F);
      matmulWT(s.up, s.x2, this.p(layerName(l, 'up_proj')), T, C, F);
      for (let i = 0; i < T * F; i++) s.act[i] = silu(s.gate[i]) * s.up[i];
      const down = new Float32Array(T * C);
      matmulWT(down, s.act, this.p(layerName(l, 'down_proj')), T, F, C);
      h = new Float32Array(T * C);
      for (let i = 0; i < T * C; i++) h[i] = s.hMid[i] + down[i];
      saved.push(s);
    }
    const xf = new Float32Array(T * C);
    const rf = new Float32Array(T);
    rmsnormForward(xf, rf, h, this.p('model.norm.weight'), T, C, eps);

    // Cross-entropy on the trained rows only (lm_head = E^T); dlogits = (softmax - onehot) / M.
    const M = rows.length;
    const dxf = new Float32Array(T * C);
    const dE = this.g('model.embed_tokens.weight');
    let loss = 0;
    const logits = new Float32Array(V);
    for (const r of rows) {
      const target = tokens[r + 1];
      const xr = xf.subarray(r * C, r * C + C);
      let max = -Infinity;
      for (let vv = 0; vv < V; vv++) {
        let dot = 0;
        const eo = vv * C;
        for (let c = 0; c < C; c++) dot += xr[c] * E[eo + c];
        logits[vv] = dot;
        if (dot > max) max = dot;
      }
      let sum = 0;
      for (let vv = 0; vv < V; vv++) sum += Math.exp(logits[vv] - max);
      const lse = max + Math.log(sum);
      loss += lse - logits[target];
      for (let vv = 0; vv < V; vv++) {
        const d = (Math.exp(logits[vv] - lse) - (vv === target ? 1 : 0)) / M;
        if (Math.abs(d) < 1e-12) continue;
        const eo = vv * C;
        for (let c = 0; c < C; c++) {
          dxf[r * C + c] += d * E[eo + c];
          dE[eo + c] += d * xr[c];
        }
      }
    }

    // Backward, layers in exact reverse order.
    let dh = new Float32Array(T * C);
    rmsnormBackward(dh, this.g('model.norm.weight'), dxf, h, this.p('model.norm.weight'), rf, T, C);
    for (let l = L - 1; l >= 0; l--) {
      const s = saved[l];
      // h = hMid + act Wd^T
      const dact = new Float32Array(T * F);
      matmulWTBackwardX(dact, dh, this.p(layerName(l, 'down_proj')), T, F, C);
      matmulWTBackwardW(this.g(layerName(l, 'down_proj')), dh, s.act, T, F, C);
      // act = silu(gate) * up
      const dgate = new Float32Array(T * F);
      const dup = new Float32Array(T * F);
      for (let i = 0; i < T * F; i++) {
        const gv = s.gate[i];
        const sg = 1 / (1 + Math.exp(-gv));
        dup[i] = dact[i] * gv * sg;
        dgate[i] = dact[i] * s.up[i] * sg * (1 + gv * (1 - sg));
      }
      const dx2 = new Float32Array(T * C);
      matmulWTBackwardX(dx2, dgate, this.p(layerName(l, 'gate_proj')), T, C, F);
      matmulWTBackwardX(dx2, dup, this.p(layerName(l, 'up_proj')), T, C, F);
      matmulWTBackwardW(this.g(layerName(l, 'gate_proj')), dgate, s.x2, T, C, F);
      matmulWTBackwardW(this.g(layerName(l, 'up_proj')), dup, s.x2, T, C, F);
      const dhMid = dh.slice();
      rmsnormBackward(
        dhMid,
        this.g(layerName(l, 'post_attention_layernorm')),
        dx2,
        s.hMid,
        this.p(layerName(l, 'post_attention_layernorm')),
        s.r2,
        T,
        C,
      );
      // hMid = hIn + att Wo^T
      const datt = new Float32Array(T * QD);
      matmulWTBackwardX(datt, dhMid, this.p(layerName(l, 'o_proj')), T, QD, C);
      matmulWTBackwardW(this.g(layerName(l, 'o_proj')), dhMid, s.att, T, QD, C);
      // att_i = sum_j p_ij v_j with p = softmax(q_i . k_j * scale)
      const dq = new Float32Array(T * QD);
      const dk = new Float32Array(T * KD);
      const dv = new Float32Array(T * KD);
      let probIndex = 0;
      const dp = new Float32Array(Math.max(...seqs.map((q) => q.len)));
      for (const { start, len } of seqs) {
        for (let hd = 0; hd < NH; hd++) {
          const kv = Math.floor(hd / G);
          const P = s.probs[probIndex++];
          for (let i = 0; i < len; i++) {
            const qo = (start + i) * QD + hd * HS;
            let dotSum = 0;
            for (let j = 0; j <= i; j++) {
              const vo = (start + j) * KD + kv * HS;
              const p = P[i * len + j];
              let d = 0;
              for (let x = 0; x < HS; x++) {
                d += datt[qo + x] * s.v[vo + x];
                dv[vo + x] += p * datt[qo + x];
              }
              dp[j] = d;
              dotSum += p * d;
            }
            for (let j = 0; j <= i; j++) {
              const ds = P[i * len + j] * (dp[j] - dotSum) * scale;
              if (ds === 0) continue;
              const ko = (start + j) * KD + kv * HS;
              for (let x = 0; x < HS; x++) {
                dq[qo + x] += ds * s.k[ko + x];
                dk[ko + x] += ds * s.q[qo + x];
              }
            }
          }
        }
      }
      ropeBackward(dq, pos, this.invFreq, T, NH, HS);
      ropeBackward(dk, pos, this.invFreq, T, NKV, HS);
      const dx1 = new Float32Array(T * C);
      matmulWTBackwardX(dx1, dq, this.p(layerName(l, 'q_proj')), T, C, QD);
      matmulWTBackwardX(dx1, dk, this.p(layerName(l, 'k_proj')), T, C, KD);
      matmulWTBackwardX(dx1, dv, this.p(layerName(l, 'v_proj')), T, C, KD);
      matmulWTBackwardW(this.g(layerName(l, 'q_proj')), dq, s.x1, T, C, QD);
      matmulWTBackwardW(this.g(layerName(l, 'k_proj')), dk, s.x1, T, C, KD);
      matmulWTBackwardW(this.g(layerName(l, 'v_proj')), dv, s.x1, T, C, KD);
      const dhIn = dhMid;
      rmsnormBackward(dhIn, this.g(layerName(l, 'input_layernorm')), dx1, s.hIn, this.p(layerName(l, 'input_layernorm')), s.r1, T, C);
      dh = dhIn;
    }
    for (let t = 0; t < T; t++) {
      const eo = tokens[t] * C;
      for (let c = 0; c < C; c++) dE[eo + c] += dh[t * C + c];
    }
    return { loss: M ? loss / M : 0, targets: M };
  }

  /** Global gradient norm, clipped to `maxNorm`, then AdamW (weight decay on matrices only). */
  adamw(lr: number, opts: { beta1?: number; beta2?: number; eps?: number; weightDecay?: number; maxNorm?: number } = {}): number {
    const { beta1 = 0.9, beta2 = 0.99, eps = 1e-8, weightDecay = 0.01, maxNorm = 1 } = opts;
    let ss = 0;
    for (const g of this.grads.values()) for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
    const norm = Math.sqrt(ss);
    const clip = maxNorm > 0 && norm > maxNorm ? maxNorm / norm : 1;
    this.step++;
    const c1 = 1 - beta1 ** this.step;
    const c2 = 1 - beta2 ** this.step;
    for (const [name, p] of this.params) {
      const g = this.grads.get(name)!;
      const m = this.m.get(name)!;
      const v = this.v.get(name)!;
      const wd = this.shapes.get(name)!.length === 2 ? weightDecay : 0;
      for (let i = 0; i < p.length; i++) {
        const gi = g[i] * clip;
        m[i] = beta1 * m[i] + (1 - beta1) * gi;
        v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
        p[i] -= lr * (m[i] / c1 / (Math.sqrt(v[i] / c2) + eps) + wd * p[i]);
      }
    }
    return norm;
  }

  tensors(dtype: 'f32' | 'bf16'): TensorData[] {
    return [...this.params].map(([name, values]) => tensorFromF32(name, this.shapes.get(name)!, values, dtype));
  }
}
