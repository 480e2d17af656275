/**
 * LoRA adapters through the Engine (bundled tiny Qwen2): two checkpoints of different ranks and
 * target modules (one rsLoRA) and the base model decoded in the same batches, each equal to the
 * reference model's greedy decoding with its adapter; an adapter whose load fails or whose tensors
 * do not fit the model fails its own request only; adapters reload after eviction from a small pool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/generate/engine';
import type { LoraAdapter } from '../../src/engine/generate/types';
import type { LoraConfig } from '../../src/engine/model/lora/lora-config';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { randomLoraTensors, referenceLora, type ReferenceLora } from '../../src/engine/reference/lora';
import type { ReferenceModel } from '../../src/engine/reference/model';
import { argmax } from './generate-helpers';
import { collect, promptOf, referenceOf, request, testEngine } from './engine-helpers';

const MODEL = 'hearth/tiny-qwen2';
let engine: Engine;
let ref: ReferenceModel;
let V: number;

beforeAll(async () => {
  // A pool that holds about two of these adapters: the third evicts the least recently used.
  engine = await testEngine({ loraPoolBytes: 128 << 10 });
  V = (await engine.loadModel(MODEL)).config.vocabSize;
  ref = (await referenceOf(MODEL)).ref;
});
afterAll(() => engine?.gpu.device.destroy());

let loads = 0;
function adapter(key: string, config: LoraConfig, tensors: TensorData[]): LoraAdapter {
  return {
    key,
    config,
    async load() {
      loads++;
      return tensors;
    },
  };
}

function greedy(prompt: number[], steps: number, lora: ReferenceLora | null): number[] {
  const session = ref.session(lora);
  let logits = session.append(prompt).subarray((prompt.length - 1) * V);
  const out: number[] = [];
  for (let i = 0; i < steps; i++) {
    out.push(argmax(logits));
    if (i + 1 < steps) logits = session.append([out[i]]);
  }
  return out;
}

describe('LoRA adapters in the batch', () => {
  it('two adapters and the base model decode together, each as the reference with its adapter', async () => {
    const cfg = (await engine.loadModel(MODEL)).config;
    const xCfg: LoraConfig = {
      rank: 4,
      alpha: 8,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      useRslora: false,
    };
    const yCfg: LoraConfig = { rank: 8, alpha: 16, targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'], useRslora: true };
    const xT = randomLoraTensors(cfg, 4, xCfg.targetModules as never, 21, 'f32', 1.5);
    const yT = randomLoraTensors(cfg, 8, yCfg.targetModules as never, 22, 'bf16', 1.5);
    const prompts = [promptOf(23, V, 1), promptOf(17, V, 2), promptOf(30, V, 3)];
    const runs = await Promise.all([
      collect(engine.generate(request(MODEL, prompts[0], { maxTokens: 6, adapter: adapter('x', xCfg, xT) })), 1),
      collect(engine.generate(request(MODEL, prompts[1], { maxTokens: 6, adapter: adapter('y', yCfg, yT) })), 1),
      collect(engine.generate(request(MODEL, prompts[2], { maxTokens: 6 })), 1),
      collect(engine.generate(request(MODEL, prompts[1], { maxTokens: 6, adapter: adapter('x', xCfg, xT) })), 1),
    ]);
    const x = referenceLora(cfg, xCfg, xT);
    const y = referenceLora(cfg, yCfg, yT);
    expect(runs[0].tokens[0]).toEqual(greedy(prompts[0], 6, x));
    expect(runs[1].tokens[0]).toEqual(greedy(prompts[1], 6, y));
    expect(runs[2].tokens[0]).toEqual(greedy(prompts[2], 6, null));
    expect(runs[3].tokens[0]).toEqual(greedy(prompts[1], 6, x));
    // The adapters matter: the same prompt gives other tokens under x than under y.
    expect(runs[3].tokens[0]).not.toEqual(runs[1].tokens[0]);
  });

  it('a failing adapter fails only its own request; a third adapter evicts the least recently used one', async () => {
    const cfg = (await engine.loadModel(MODEL)).config;
    const zCfg: LoraConfig = { rank: 4, alpha: 4, targetModules: ['q_proj'], useRslora: false };
    const broken: LoraAdapter = { key: 'broken', config: zCfg, load: () => Promise.reject(new Error('checkpoint blob missing')) };
    const misfit = adapter('misfit', { ...zCfg, rank: 2 }, randomLoraTensors(cfg, 4, ['q_proj'], 31)); // rank 4 tensors, config says 2
    const results = await Promise.allSettled([
      collect(engine.generate(request(MODEL, promptOf(12, V, 4), { maxTokens: 3, adapter: broken })), 1),
      collect(engine.generate(request(MODEL, promptOf(12, V, 5), { maxTokens: 3, adapter: misfit })), 1),
      collect(engine.generate(request(MODEL, promptOf(12, V, 6), { maxTokens: 3 })), 1),
    ]);
    expect(results[0].status).toBe('rejected');
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/checkpoint blob missing/);
    expect(results[1].status).toBe('rejected');
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/shape/);
    expect(results[2].status).toBe('fulfilled');
    expect((results[2] as PromiseFulfilledResult<Awaited<ReturnType<typeof collect>>>).value.tokens[0]).toEqual(
      greedy(promptOf(12, V, 6), 3, null),
    );

    // x (rank 4) and y (rank 8) fill most of the 128 KiB pool; z needs room, so the least recently
    // used of them (y: x runs again first) is evicted, and y loads again when a request uses it.
    const xCfg: LoraConfig = {
      rank: 4,
      alpha: 8,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      useRslora: false,
    };
    const xT = randomLoraTensors(cfg, 4, xCfg.targetModules as never, 21, 'f32', 1.5);
    const beforeX = loads;
    await collect(engine.generate(request(MODEL, promptOf(9, V, 8), { maxTokens: 1, adapter: adapter('x', xCfg, xT) })), 1);
    expect(loads).toBe(beforeX); // still resident
    const z = adapter('z', zCfg, randomLoraTensors(cfg, 4, ['q_proj'], 32));
    const before = loads;
    await collect(engine.generate(request(MODEL, promptOf(9, V, 7), { maxTokens: 2, adapter: z })), 1);
    const yCfg: LoraConfig = { rank: 8, alpha: 16, targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'], useRslora: true };
    const yT = randomLoraTensors(cfg, 8, yCfg.targetModules as never, 22, 'bf16', 1.5);
    const again = await collect(engine.generate(request(MODEL, promptOf(17, V, 2), { maxTokens: 6, adapter: adapter('y', yCfg, yT) })), 1);
    expect(again.tokens[0]).toEqual(greedy(promptOf(17, V, 2), 6, referenceLora(cfg, yCfg, yT)));
    expect(loads - before).toBe(2); // z, then y again
  });
});
