import { describe, expect, it } from 'vitest';
import type { Architecture, ModelConfig } from '../../../src/engine/model/config/model-config';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { expectClose } from '../../../src/engine/reference/check';
import { greedyDecode, ReferenceModel } from '../../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';

/**
 * An independent, deliberately naive forward of one token sequence: token-by-token, head-by-head,
 * written straight from the HF formulas with nested arrays, sharing no code with the reference.
 */
function naiveForward(cfg: ModelConfig, tensors: TensorData[], tokens: number[]): number[][] {
  const W = (name: string) => {
    const t = tensors.find((x) => x.name === name);
    if (!t) throw new Error(name);
    return Array.from(tensorToF32(t));
  };
  const row = (m: number[], r: number, cols: number) => m.slice(r * cols, (r + 1) * cols);
  const matvec = (m: number[], x: number[], rows: number, b?: number[]) =>
    Array.from({ length: rows }, (_, r) => row(m, r, x.length).reduce((s, w, i) => s + w * x[i], b ? b[r] : 0));
  const norm = (x: number[], w: number[]) => {
    const ms = x.reduce((s, v) => s + v * v, 0) / x.length;
    return x.map((v, i) => (v / Math.sqrt(ms + cfg.rmsNormEps)) * w[i]);
  };
  const HS = cfg.headDim;
  const rope = (x: number[], pos: number) => {
    const out = x.slice();
    for (let i = 0; i < HS / 2; i++) {
      const inv = 1 / Math.pow(cfg.ropeTheta, (2 * i) / HS);
      const c = Math.cos(pos * inv);
      const s = Math.sin(pos * inv);
      out[i] = x[i] * c - x[i + HS / 2] * s;
      out[i + HS / 2] = x[i + HS / 2] * c + x[i] * s;
    }
    return out;
  };
  const C = cfg.hiddenSize;
  const emb = W('model.embed_tokens.weight');
  let hs = tokens.map((t) => row(emb, t, C));
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}`;
    const bias = (n: string) => (cfg.attentionBias ? W(`${p}.self_attn.${n}_proj.bias`) : undefined);
    const keys: number[][][] = [];
    const vals: number[][][] = [];
    const outs: number[][] = [];
    hs.forEach((h, pos) => {
      const x = norm(h, W(`${p}.input_layernorm.weight`));
      const q = matvec(W(`${p}.self_attn.q_proj.weight`), x, cfg.numHeads * HS, bias('q'));
      const k = matvec(W(`${p}.self_attn.k_proj.weight`), x, cfg.numKvHeads * HS, bias('k'));
      const v = matvec(W(`${p}.self_attn.v_proj.weight`), x, cfg.numKvHeads * HS, bias('v'));
      const head = (a: number[], i: number) => a.slice(i * HS, (i + 1) * HS);
      const qn = (a: number[]) => (cfg.qkNorm ? norm(a, W(`${p}.self_attn.q_norm.weight`)) : a);
      const kn = (a: number[]) => (cfg.qkNorm ? norm(a, W(`${p}.self_attn.k_norm.weight`)) : a);
      keys.push(Array.from({ length: cfg.numKvHeads }, (_, i) => rope(kn(head(k, i)), pos)));
      vals.push(Array.from({ length: cfg.numKvHeads }, (_, i) => head(v, i)));
      const att: number[] = [];
      for (let i = 0; i < cfg.numHeads; i++) {
        const qh = rope(qn(head(q, i)), pos);
        const kvh = Math.floor(i / (cfg.numHeads / cfg.numKvHeads));
        const scores = keys.map((kk) => kk[kvh].reduce((s, w, d) => s + w * qh[d], 0) / Math.sqrt(HS));
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let d = 0; d < HS; d++) att.push(e.reduce((s, w, j) => s + (w / z) * vals[j][kvh][d], 0));
      }
      const o = matvec(W(`${p}.self_attn.o_proj.weight`), att, C);
      const h2 = h.map((v2, c) => v2 + o[c]);
      const x2 = norm(h2, W(`${p}.post_attention_layernorm.weight`));
      const F = cfg.intermediateSize;
      const g = matvec(W(`${p}.mlp.gate_proj.weight`), x2, F);
      const u = matvec(W(`${p}.mlp.up_proj.weight`), x2, F);
      const a = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * u[i]);
      const d = matvec(W(`${p}.mlp.down_proj.weight`), a, C);
      outs.push(h2.map((v2, c) => v2 + d[c]));
    });
    hs = outs;
  }
  const head = cfg.tieWordEmbeddings ? emb : W('lm_head.weight');
  return hs.map((h) => matvec(head, norm(h, W('model.norm.weight')), cfg.vocabSize));
}

const small = (arch: Architecture) =>
  testConfig(arch, {
    hiddenSize: 32,
    numLayers: 1,
    numHeads: 4,
    numKvHeads: 2,
    headDim: arch === 'qwen3' ? 12 : 8,
    intermediateSize: 40,
    vocabSize: 50,
  });

describe('reference model forward', () => {
  for (const arch of ['llama', 'qwen2', 'qwen3'] as const) {
    it(`matches an independent naive computation (${arch}, 1 layer)`, () => {
      const cfg = small(arch);
      const tensors = randomModelTensors(cfg, 'f32', 11);
      const tokens = [3, 17, 42, 8];
      const logits = new ReferenceModel(cfg, tensors).forward(tokens);
      const want = naiveForward(cfg, tensors, tokens).flat();
      expectClose(logits, want, { atol: 1e-4, rtol: 1e-4 }, `${arch} logits`);
    });
  }

  it('matches the naive computation with two layers, untied lm_head and bf16 weights', () => {
    const cfg = { ...small('llama'), numLayers: 2, tieWordEmbeddings: false };
    const tensors = randomModelTensors(cfg, 'bf16', 12);
    const logits = new ReferenceModel(cfg, tensors).forward([1, 2, 3]);
    expectClose(logits, naiveForward(cfg, tensors, [1, 2, 3]).flat(), { atol: 1e-4, rtol: 1e-4 }, 'logits');
  });

  it('gives the same logits incrementally (KV cache) as in one pass', () => {
    const cfg = testConfig('qwen3');
    const model = new ReferenceModel(cfg, randomModelTensors(cfg, 'f16', 13));
    const tokens = [5, 9, 100, 7, 33, 2, 1];
    const full = model.forward(tokens);
    const s = model.session();
    const a = s.append(tokens.slice(0, 4));
    const b = s.append(tokens.slice(4, 5));
    const c = s.append(tokens.slice(5));
    expect(s.length).toBe(7);
    const V = cfg.vocabSize;
    const joined = new Float32Array(full.length);
    joined.set(a, 0);
    joined.set(b, 4 * V);
    joined.set(c, 5 * V);
    expectClose(joined, full, { atol: 1e-5, rtol: 1e-5 }, 'incremental logits');
  });

  it('greedy decoding picks the argmax of each step and continues from it', () => {
    const cfg = testConfig('qwen2');
    const model = new ReferenceModel(cfg, randomModelTensors(cfg, 'f32', 14));
    const prompt = [4, 8, 15];
    const out = greedyDecode(model, prompt, 4);
    expect(out).toHaveLength(4);
    // Re-running the whole sequence: each generated token is the argmax at the previous position.
    const all = [...prompt, ...out];
    const logits = model.forward(all);
    const V = cfg.vocabSize;
    for (let i = 0; i < 4; i++) {
      const r = logits.subarray((prompt.length - 1 + i) * V, (prompt.length + i) * V);
      expect(out[i]).toBe(r.indexOf(Math.max(...r)));
    }
  });

  it('names the missing or misshapen tensor', () => {
    const cfg = testConfig('llama');
    const tensors = randomModelTensors(cfg, 'f32', 15);
    expect(
      () =>
        new ReferenceModel(
          cfg,
          tensors.filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight'),
        ),
    ).toThrow('missing tensor model.layers.1.mlp.up_proj.weight');
    const bad = tensors.map((t) => (t.name === 'model.norm.weight' ? { ...t, shape: [95] } : t));
    expect(() => new ReferenceModel(cfg, bad)).toThrow('tensor model.norm.weight: shape [95] expected [96]');
  });
});
