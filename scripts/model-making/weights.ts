/**
 * Random weights for a bundled model, deterministic for a seed: every tensor of the weight plan
 * (planParameters, src/engine/model/weights/parameter-plan.ts) in the model's file dtype. Matrices and the embedding are
 * N(0, initializer_range) like transformers' `_init_weights`; norm weights are 1 + N(0, 0.1) and
 * biases N(0, 0.02) rather than exactly 1 and 0, so a kernel that ignores a norm or bias weight,
 * or reads it transposed, gives different logits from the reference instead of passing by accident.
 */
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { encodeFromF32 } from '../../src/engine/tensor/dtype';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { numel } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { Prng } from './prng';

export function randomWeights(config: ModelConfig, dtype: DType, seed: number, initializerRange: number): TensorData[] {
  const r = new Prng(seed);
  const out: TensorData[] = [];
  for (const w of planParameters(config)) {
    const values = new Float32Array(numel(w.shape));
    const isNorm = w.name.endsWith('norm.weight');
    const isBias = w.name.endsWith('.bias');
    for (let i = 0; i < values.length; i++) {
      values[i] = isNorm ? 1 + 0.1 * r.normal() : isBias ? 0.02 * r.normal() : initializerRange * r.normal();
    }
    out.push({ name: w.name, dtype, shape: w.shape, data: encodeFromF32(values, dtype) });
  }
  return out;
}
