// Phi-3 and SmolLM3 config.json files as published (fixtures/: Phi-3-mini-4k-instruct; the text model
// of Phi-3-vision-128k-instruct, LongRoPE under its first name "su", from diffusers' OmniGen tests;
// SmolLM3-3B-Base's fields, whose no_rope_layers come from no_rope_layer_interval) into the engine's
// config, and the RoPE each implies (model/config/rope.ts): partial rotary dims, LongRoPE's short factors
// below original_max_position_embeddings and long ones from it, its attention factor on cos and sin.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/engine/model/config/fields';
import { parseModelConfig } from '../../../src/engine/model/config/hf-config';
import { layerUsesRope, ropeInvFreq, ropeTable, rotaryDim } from '../../../src/engine/model/config/rope';
import { planParameters } from '../../../src/engine/model/weights/parameter-plan';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));
const f = Math.fround;

describe('Phi-3 configs', () => {
  it('Phi-3-mini-4k-instruct: fused tensors, full rotary, no scaling, the 2047-token sliding window recorded', () => {
    const c = parseModelConfig(fixture('phi-3-mini-4k-instruct.config.json'));
    expect(c).toMatchObject({ arch: 'phi3', headDim: 96, numKvHeads: 32, rmsNormEps: 1e-5, ropeScaling: null, fusedProjections: true });
    expect(c.tieWordEmbeddings).toBe(false);
    expect(c.attentionBias || c.outputBias || c.mlpBias).toBe(false);
    expect(rotaryDim(c)).toBe(96);
    expect(c.slidingWindow).toBe(2047);
    expect(c.layerTypes.every((t) => t === 'sliding_attention')).toBe(true);
    const names = planParameters(c).map((p) => p.name);
    expect(names).toContain('model.layers.0.self_attn.qkv_proj.weight');
    expect(names).toContain('model.layers.31.mlp.gate_up_proj.weight');
    expect(names.some((n) => /q_proj|gate_proj|up_proj\.weight$/.test(n) && !n.includes('gate_up'))).toBe(false);
    const shape = (n: string) => planParameters(c).find((p) => p.name === n)!.shape;
    expect(shape('model.layers.0.self_attn.qkv_proj.weight')).toEqual([3 * 3072, 3072]);
    expect(shape('model.layers.0.mlp.gate_up_proj.weight')).toEqual([2 * 8192, 3072]);
  });

  it('Phi-3-vision-128k text model: "su" LongRoPE with 48 short and long factors and the derived attention factor', () => {
    const json = fixture('phi-3-vision-128k-instruct.text-config.json');
    const c = parseModelConfig(json);
    const s = c.ropeScaling!;
    if (s.type !== 'longrope') throw new Error('expected longrope');
    expect(s.originalMaxPositionEmbeddings).toBe(4096);
    expect(s.shortFactor).toEqual(json.rope_scaling.short_factor);
    expect(s.longFactor).toEqual(json.rope_scaling.long_factor);
    // transformers: factor = 131072 / 4096 = 32, attention_factor = sqrt(1 + ln 32 / ln 4096).
    expect(s.attentionFactor).toBeCloseTo(Math.sqrt(1 + Math.log(32) / Math.log(4096)), 12);
    expect(c.slidingWindow).toBeNull(); // 131072 covers the whole context
  });

  it('Phi-4-mini layout: partial_rotary_factor 0.75 rotates 96 of 128 dims; factors must count 48', () => {
    const base = fixture('phi-3-vision-128k-instruct.text-config.json');
    const json = { ...base, hidden_size: 3072, num_attention_heads: 24, num_key_value_heads: 8, partial_rotary_factor: 0.75 };
    json.rope_scaling = { ...base.rope_scaling, type: 'longrope' };
    const c = parseModelConfig(json);
    expect(c.headDim).toBe(128);
    expect(rotaryDim(c)).toBe(96);
    expect(ropeInvFreq(c)).toHaveLength(48);
    const wrong = { ...json, partial_rotary_factor: 0.5 };
    expect(() => parseModelConfig(wrong)).toThrow(ConfigError);
    expect(() => parseModelConfig(wrong)).toThrow(/short_factor" must list 32 positive numbers/);
    expect(() => parseModelConfig({ ...json, partial_rotary_factor: 1.5 })).toThrow(/partial_rotary_factor" must be a number in \(0, 1\]/);
    // transformers 5 spells the same inside rope_parameters.
    const { rope_scaling, rope_theta, partial_rotary_factor, original_max_position_embeddings, ...rest } = json;
    const v5 = parseModelConfig({
      ...rest,
      rope_parameters: { ...rope_scaling, rope_type: 'longrope', rope_theta, partial_rotary_factor, original_max_position_embeddings },
    });
    expect(v5.ropeScaling).toEqual(c.ropeScaling);
    expect(rotaryDim(v5)).toBe(96);
  });

  it('the RoPE table: short factors below the original length, long from it, cos and sin scaled; pass-through dims absent', () => {
    const c = parseModelConfig(fixture('phi-3-vision-128k-instruct.text-config.json'));
    const s = c.ropeScaling!;
    if (s.type !== 'longrope') throw new Error('expected longrope');
    const half = 48;
    const positions = 4100;
    const table = ropeTable(c, positions);
    expect(table).toHaveLength(positions * half * 2);
    const entry = (p: number, i: number) => [table[(p * half + i) * 2], table[(p * half + i) * 2 + 1]];
    for (const [p, factors] of [
      [4095, s.shortFactor],
      [4096, s.longFactor],
    ] as const) {
      for (const i of [0, 7, 47]) {
        const inv = f(1 / f(f(factors[i]) * f(Math.pow(10000, f((2 * i) / 96)))));
        const a = f(p * inv);
        const [cos, sin] = entry(p, i);
        expect(cos).toBe(f(f(Math.cos(a)) * f(s.attentionFactor)));
        expect(sin).toBe(f(f(Math.sin(a)) * f(s.attentionFactor)));
      }
    }
  });
});

describe('SmolLM3 configs', () => {
  it('SmolLM3-3B-Base: Llama-like, tied, every 4th layer without RoPE (no_rope_layer_interval 4)', () => {
    const c = parseModelConfig(fixture('smollm3-3b-base.config.json'));
    expect(c).toMatchObject({ arch: 'smollm3', headDim: 128, numKvHeads: 4, ropeTheta: 5e6, tieWordEmbeddings: true, ropeScaling: null });
    expect(c.fusedProjections).toBeUndefined();
    const rope = Array.from({ length: 36 }, (_, l) => layerUsesRope(c, l));
    expect(rope.filter((r) => !r)).toHaveLength(9);
    expect(rope.slice(0, 8)).toEqual([true, true, true, false, true, true, true, false]);
    expect(planParameters(c).map((p) => p.name)).toContain('model.layers.0.self_attn.q_proj.weight');
  });

  it('an explicit no_rope_layers list wins (1 = the layer uses RoPE); a malformed one is refused', () => {
    const j = fixture('smollm3-3b-base.config.json');
    const list = Array.from({ length: 36 }, (_, l) => (l % 2 === 0 ? 1 : 0));
    const c = parseModelConfig({ ...j, no_rope_layers: list });
    expect(layerUsesRope(c, 0)).toBe(true);
    expect(layerUsesRope(c, 1)).toBe(false);
    expect(() => parseModelConfig({ ...j, no_rope_layers: [1, 0] })).toThrow(/no_rope_layers" must list 0 or 1 for each of the 36 layers/);
    expect(() => parseModelConfig({ ...j, no_rope_layers: list.map((v) => v * 2) })).toThrow(ConfigError);
  });
});
