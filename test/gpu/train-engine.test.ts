// The trainer over the generation engine: the same device and the same resident weights, and an
// adapter the trainer wrote gives the inference engine the same next-token logprobs as the
// training forward (prompt logprobs of a prefill with the adapter against session.logprobs).
import { afterAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../src/engine/generate/types';
import { expectClose } from '../../src/engine/reference/check';
import { trainingEngineOver } from '../../src/engine/train/engine';
import { collect, promptOf, request, testEngine, testGpu } from './engine-helpers';
import { loraConfig, OPTIMIZER, randomSequences } from './train-helpers';

afterAll(async () => (await testGpu()).device.destroy());

describe('training over the generation engine', () => {
  for (const id of ['hearth/tiny-qwen3', 'hearth/tiny-qwen2']) {
    it(`${id}: two SFT steps, then chat prefill with the adapter gives the training forward's logprobs`, async () => {
      const engine = await testEngine();
      const served = await engine.loadModel(id);
      const V = served.config.vocabSize;
      const trainer = trainingEngineOver(engine, { log: () => {} });
      const lora = loraConfig(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], 8, 16);
      const session = await trainer.startSession({
        baseModel: id,
        lora,
        initialAdapter: null,
        optimizerState: null,
        optimizer: OPTIMIZER,
        seed: 3,
      });
      const seqs = randomSequences(V, [20, 13], 4).map((s) => ({ tokens: s.tokens, trainable: s.trainable }));
      for (let i = 0; i < 2; i++) await session.step(seqs, { kind: 'sft' }, 5e-2);
      const tensors = await session.exportAdapter();
      const adapter: LoraAdapter = { key: `test:${id}`, config: lora, load: async () => tensors };
      const prompt = promptOf(23, V, 5);
      const [trained] = await session.logprobs([{ tokens: Uint32Array.from(prompt), trainable: new Uint8Array(prompt.length) }]);
      const out = await collect(engine.generate(request(id, prompt, { adapter, promptLogprobs: 1, maxTokens: 1 })), 1);
      const served_ = out.prefilled!.promptLogprobs!.slice(1).map((p) => p!.logprob);
      expectClose(served_, Array.from(trained.subarray(1)), { atol: 2e-3, rtol: 2e-3 }, `${id} prompt logprobs with the trained adapter`);
      // The adapter changed the model: the base model's logprobs differ.
      const base = await collect(engine.generate(request(id, prompt, { promptLogprobs: 1, maxTokens: 1 })), 1);
      const diff = base.prefilled!.promptLogprobs!.slice(1).reduce((m, p, i) => Math.max(m, Math.abs(p!.logprob - served_[i])), 0);
      expect(diff).toBeGreaterThan(1e-2);
      session.dispose();
    });
  }
});
