/**
 * Baking a LoRA adapter into base weights: W' = W + s B A for every adapted projection (PEFT's
 * merge_and_unload), written back in the base tensors' dtype. How the demo's trained adapter
 * becomes the bundled tiny-chat weights.
 *
 * Not here: serving adapters unmerged (the engine applies them per request).
 */
import { tensorFromF32, tensorToF32 } from '../../src/engine/tensor/tensor-data';
import type { TensorData } from '../../src/engine/tensor/tensor-data';
import { loraScale } from '../../src/engine/model/lora/lora-config';
import { loraModulePath, parseLoraTensorName } from '../../src/engine/model/lora/peft-modules';

export function mergeLora(
  base: readonly TensorData[],
  adapter: readonly TensorData[],
  lora: { rank: number; alpha: number; useRslora: boolean },
): TensorData[] {
  const s = loraScale(lora.alpha, lora.rank, lora.useRslora);
  const pairs = new Map<string, { A?: TensorData; B?: TensorData }>();
  for (const t of adapter) {
    const key = parseLoraTensorName(t.name);
    if (!key) throw new Error(`merge: unexpected adapter tensor ${t.name}`);
    const name = `model.layers.${key.layer}.${loraModulePath(key.module)}.weight`;
    pairs.set(name, { ...pairs.get(name), [key.which]: t });
  }
  const used = new Set<string>();
  const out = base.map((w) => {
    const pair = pairs.get(w.name);
    if (!pair) return w;
    if (!pair.A || !pair.B) throw new Error(`merge: ${w.name} has only one of lora_A and lora_B`);
    used.add(w.name);
    const [N, K] = w.shape;
    const r = pair.A.shape[0];
    const W = tensorToF32(w);
    const A = tensorToF32(pair.A); // (r, K)
    const B = tensorToF32(pair.B); // (N, r)
    for (let n = 0; n < N; n++) {
      for (let j = 0; j < r; j++) {
        const b = s * B[n * r + j];
        if (b === 0) continue;
        for (let k = 0; k < K; k++) W[n * K + k] += b * A[j * K + k];
      }
    }
    return tensorFromF32(w.name, [...w.shape], W, w.dtype);
  });
  for (const name of pairs.keys()) if (!used.has(name)) throw new Error(`merge: the base model has no ${name}`);
  return out;
}
