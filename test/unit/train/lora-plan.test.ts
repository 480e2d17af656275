import { describe, expect, it } from 'vitest';
import { tensorToF32 } from '../../../src/engine/tensor/tensor-data';
import { randomLoraTensors } from '../../../src/engine/reference/lora';
import { testConfig } from '../../../src/engine/reference/random-model';
import {
  checkLoraTensors,
  flatFromSuffixed,
  initLoraParameters,
  loraFromTensors,
  loraToTensors,
  planLora,
} from '../../../src/engine/train/lora-plan';

const ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

describe('LoRA parameter plan', () => {
  const cfg = testConfig('qwen2');
  const C = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;

  it('lays every PEFT tensor out once, back to back, with the shapes PEFT saves', () => {
    const plan = planLora(cfg, { rank: 4, alpha: 8, targetModules: ALL, useRslora: false });
    expect(plan.scale).toBe(2);
    expect(plan.tensors.length).toBe(cfg.numLayers * 7 * 2);
    let next = 0;
    for (const t of plan.tensors) {
      expect(t.offset).toBe(next);
      next += t.shape[0] * t.shape[1];
    }
    expect(next).toBe(plan.elements);
    const perLayer = 4 * (C + q) + 4 * (C + kv) * 2 + 4 * (q + C) + 4 * (C + F) * 2 + 4 * (F + C);
    expect(plan.elements).toBe(perLayer * cfg.numLayers);
    const names = plan.tensors.map((t) => t.name);
    expect(names).toContain('base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight');
    expect(names).toContain('base_model.model.model.layers.0.mlp.down_proj.lora_B.weight');
    const down = plan.tensors.find((t) => t.name === 'base_model.model.model.layers.0.mlp.down_proj.lora_B.weight')!;
    expect(down.shape).toEqual([C, 4]);
  });

  it("stacks a group's A matrices and writes each B into its column range of the fused output", () => {
    const plan = planLora(cfg, { rank: 3, alpha: 3, targetModules: ['q_proj', 'v_proj', 'up_proj', 'o_proj'], useRslora: false });
    const l = plan.layers[1];
    expect(l.qkv!.modules.map((m) => [m.module, m.col0, m.aRow])).toEqual([
      ['q_proj', 0, 0],
      ['v_proj', q + kv, 3],
    ]);
    expect(l.qkv!.rows).toBe(6);
    expect(l.qkv!.outWidth).toBe(q + 2 * kv);
    expect(l.qkv!.modules[1].aOffset).toBe(l.qkv!.aOffset + 3 * C);
    expect(l.gateUp!.modules.map((m) => [m.module, m.col0])).toEqual([['up_proj', F]]);
    expect(l.gateUp!.outWidth).toBe(2 * F);
    expect(l.down).toBeNull();
    expect(l.o!.in).toBe(q);
    expect(plan.maxGroupRows).toBe(6);
  });

  it('uses alpha / sqrt(r) with rsLoRA and refuses unknown modules', () => {
    expect(planLora(cfg, { rank: 16, alpha: 8, targetModules: ['q_proj'], useRslora: true }).scale).toBe(2);
    expect(() => planLora(cfg, { rank: 4, alpha: 8, targetModules: ['lm_head'], useRslora: false })).toThrow(/lm_head/);
    expect(() => planLora(cfg, { rank: 0, alpha: 8, targetModules: ['q_proj'], useRslora: false })).toThrow(/rank/);
  });
});

describe('PEFT default initialisation', () => {
  const cfg = testConfig('llama', { hiddenSize: 256, intermediateSize: 512 });
  const plan = planLora(cfg, { rank: 8, alpha: 16, targetModules: ALL, useRslora: false });

  it('draws A from U(-1/sqrt(in), 1/sqrt(in)) and sets B to zero, reproducibly from the seed', () => {
    const p = initLoraParameters(plan, 7);
    for (const t of plan.tensors) {
      const v = p.subarray(t.offset, t.offset + t.shape[0] * t.shape[1]);
      if (t.fanIn === null) {
        expect(v.every((x) => x === 0)).toBe(true);
        continue;
      }
      const bound = 1 / Math.sqrt(t.fanIn);
      let sum = 0;
      let sq = 0;
      let max = 0;
      for (const x of v) {
        max = Math.max(max, Math.abs(x));
        sum += x;
        sq += x * x;
      }
      expect(max).toBeLessThanOrEqual(bound);
      // Uniform(-b, b): mean 0, variance b^2 / 3; thousands of samples per matrix.
      expect(Math.abs(sum / v.length)).toBeLessThan(0.1 * bound);
      expect(sq / v.length / ((bound * bound) / 3)).toBeGreaterThan(0.85);
      expect(sq / v.length / ((bound * bound) / 3)).toBeLessThan(1.15);
    }
    expect(initLoraParameters(plan, 7)).toEqual(p);
    expect(initLoraParameters(plan, 8)).not.toEqual(p);
  });
});

describe('PEFT tensors in and out', () => {
  const cfg = testConfig('qwen3');
  const modules = ['q_proj', 'k_proj', 'o_proj', 'gate_proj', 'down_proj'] as const;
  const plan = planLora(cfg, { rank: 4, alpha: 4, targetModules: [...modules], useRslora: false });

  it('round-trips through the flat buffer, from f32 and from bf16 files', () => {
    const tensors = randomLoraTensors(cfg, 4, modules, 3, 'f32');
    const flat = loraFromTensors(plan, cfg, tensors);
    const out = loraToTensors(plan, flat);
    expect(out.map((t) => t.name).sort()).toEqual(tensors.map((t) => t.name).sort());
    for (const t of out) {
      const src = tensors.find((s) => s.name === t.name)!;
      expect(t.shape).toEqual(src.shape);
      expect(t.dtype).toBe('f32');
      expect(tensorToF32(t)).toEqual(tensorToF32(src));
    }
    const bf16 = randomLoraTensors(cfg, 4, modules, 3, 'bf16');
    const fromBf16 = loraFromTensors(plan, cfg, bf16);
    for (const t of loraToTensors(plan, fromBf16)) {
      expect(tensorToF32(t)).toEqual(tensorToF32(bf16.find((s) => s.name === t.name)!));
    }
  });

  it('refuses an adapter for other modules, another rank, or with a tensor missing', () => {
    expect(() => loraFromTensors(plan, cfg, randomLoraTensors(cfg, 4, [...modules, 'up_proj'], 3))).toThrow(/up_proj/);
    expect(() => loraFromTensors(plan, cfg, randomLoraTensors(cfg, 4, ['q_proj'], 3))).toThrow(/missing .*k_proj/);
    expect(() => loraFromTensors(plan, cfg, randomLoraTensors(cfg, 8, modules, 3))).toThrow(/shape/);
  });

  it('checks the tensors against the plan before allocating its buffer (issue 26)', () => {
    // r = 256 on every module of a 4096-layer model with 16384-wide layers: a plan of 2^36 floats,
    // past any typed array. A file holding one tensor is refused by name, not by a RangeError.
    const huge = testConfig('qwen3', {
      hiddenSize: 16384,
      intermediateSize: 16384,
      numLayers: 4096,
      numHeads: 128,
      numKvHeads: 128,
      headDim: 128,
    });
    const big = planLora(huge, { rank: 256, alpha: 16, targetModules: ALL, useRslora: false });
    expect(big.elements).toBeGreaterThan(2 ** 33);
    const one = randomLoraTensors(cfg, 4, ['q_proj'], 3).filter((t) => t.name.includes('layers.0.'));
    expect(() => checkLoraTensors(big, huge, one)).toThrow(/LoRA adapter: .*shape|missing/);
    expect(() => loraFromTensors(big, huge, one)).toThrow(/LoRA adapter: .*shape|missing/);
    expect(() => checkLoraTensors(plan, cfg, randomLoraTensors(cfg, 4, modules, 3))).not.toThrow();
  });

  it('reads suffixed optimizer-state tensors back into the same layout', () => {
    const flat = Float32Array.from({ length: plan.elements }, (_, i) => i % 97);
    const state = loraToTensors(plan, flat, '.exp_avg');
    expect(state[0].name.endsWith('.lora_A.weight.exp_avg')).toBe(true);
    expect(flatFromSuffixed(plan, state, '.exp_avg')).toEqual(flat);
    expect(() => flatFromSuffixed(plan, state.slice(1), '.exp_avg')).toThrow(/missing/);
  });
});
