// The demo's CPU pretraining model (scripts/demo/pretrain): its loss matches the reference
// model's forward, its gradients match finite differences, and AdamW steps lower the loss.
import { describe, expect, it } from 'vitest';
import { ReferenceModel } from '../../../src/engine/reference/model';
import { randomModelTensors, testConfig } from '../../../src/engine/reference/random-model';
import { CpuLlama, type TrainSequence } from '../../../scripts/demo/pretrain/cpu-llama';

const cfg = testConfig('llama', {
  vocabSize: 53,
  hiddenSize: 24,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 6,
  intermediateSize: 40,
  tieWordEmbeddings: true,
});
const tensors = randomModelTensors(cfg, 'f32', 11).map((t) => t); // tied: no lm_head tensor
const batch: TrainSequence[] = [
  { tokens: [3, 7, 9, 11, 2], trainable: [0, 0, 1, 1, 1] },
  { tokens: [5, 8, 1], trainable: [0, 1, 1] },
];

function referenceLoss(model: ReferenceModel): number {
  let sum = 0;
  let n = 0;
  for (const s of batch) {
    const logits = model.forward(s.tokens);
    const V = cfg.vocabSize;
    for (let i = 1; i < s.tokens.length; i++) {
      if (!s.trainable[i]) continue;
      const row = logits.subarray((i - 1) * V, i * V);
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
      sum += lse - row[s.tokens[i]];
      n++;
    }
  }
  return sum / n;
}

describe('CpuLlama (demo pretraining)', { timeout: 60_000 }, () => {
  it("computes the reference model's loss", () => {
    const cpu = new CpuLlama(cfg, tensors);
    const { loss, targets } = cpu.lossAndBackward(batch);
    expect(targets).toBe(5);
    expect(loss).toBeCloseTo(referenceLoss(new ReferenceModel(cfg, tensors)), 4);
  });

  it('has the gradients of finite differences, for every kind of weight', () => {
    const cpu = new CpuLlama(cfg, tensors);
    cpu.lossAndBackward(batch);
    const names = [
      'model.embed_tokens.weight',
      'model.norm.weight',
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.0.self_attn.k_proj.weight',
      'model.layers.1.self_attn.v_proj.weight',
      'model.layers.0.self_attn.o_proj.weight',
      'model.layers.1.mlp.gate_proj.weight',
      'model.layers.0.mlp.up_proj.weight',
      'model.layers.1.mlp.down_proj.weight',
      'model.layers.0.input_layernorm.weight',
      'model.layers.1.post_attention_layernorm.weight',
    ];
    for (const name of names) {
      const p = cpu.params.get(name)!;
      const g = cpu.grads.get(name)!;
      for (const i of [0, 7, p.length - 1]) {
        const h = 1e-2;
        const old = p[i];
        p[i] = old + h;
        const up = new CpuLlama(cfg, tensorsOf(cpu)).lossAndBackward(batch).loss;
        p[i] = old - h;
        const down = new CpuLlama(cfg, tensorsOf(cpu)).lossAndBackward(batch).loss;
        p[i] = old;
        const fd = (up - down) / (2 * h);
        expect(Math.abs(g[i] - fd), `${name}[${i}]: ${g[i]} vs ${fd}`).toBeLessThan(2e-3 + 2e-2 * Math.abs(fd));
      }
    }
  });

  it('lowers the loss with AdamW steps', () => {
    const cpu = new CpuLlama(cfg, tensors);
    const first = cpu.lossAndBackward(batch).loss;
    cpu.adamw(1e-2);
    for (let i = 0; i < 20; i++) {
      cpu.zeroGrad();
      cpu.lossAndBackward(batch);
      cpu.adamw(1e-2);
    }
    cpu.zeroGrad();
    expect(cpu.lossAndBackward(batch).loss).toBeLessThan(first * 0.5);
  });
});

function tensorsOf(cpu: CpuLlama) {
  return cpu.tensors('f32');
}
