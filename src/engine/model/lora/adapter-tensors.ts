/**
 * A PEFT adapter's tensors checked against a model and a rank, grouped by (layer, module): what every
 * reader of an adapter (the GPU adapter pool, the GGUF adapter writer, the reference) starts from.
 */
import type { ModelConfig } from '../config/model-config';
import type { TensorData } from '../../tensor/tensor-data';
import { loraModuleDims, loraModulesOf, parseLoraTensorName } from './peft-modules';

/**
 * Checks a PEFT adapter's tensors against a config and rank and returns them by (layer, module):
 * every A is [r, in], every B [out, r], each module has both or neither. Throws naming the tensor.
 */
export function groupLoraTensors(
  cfg: ModelConfig,
  rank: number,
  tensors: Iterable<TensorData>,
): Map<string, { A: TensorData; B: TensorData }> {
  const found = new Map<string, { A?: TensorData; B?: TensorData }>();
  for (const t of tensors) {
    const key = parseLoraTensorName(t.name);
    if (!key) throw new Error(`LoRA adapter: unexpected tensor ${t.name}`);
    if (key.layer >= cfg.numLayers) throw new Error(`LoRA adapter: ${t.name} names layer ${key.layer}, the model has ${cfg.numLayers}`);
    if (!loraModulesOf(cfg).includes(key.module)) {
      throw new Error(
        `LoRA adapter: ${t.name} adapts ${key.module}, which this ${cfg.arch} model does not have (${loraModulesOf(cfg).join(', ')})`,
      );
    }
    const d = loraModuleDims(cfg, key.module);
    const want = key.which === 'A' ? [rank, d.in] : [d.out, rank];
    if (t.shape.length !== 2 || t.shape[0] !== want[0] || t.shape[1] !== want[1]) {
      throw new Error(`LoRA adapter: ${t.name} has shape [${t.shape.join(', ')}], expected [${want.join(', ')}] for rank ${rank}`);
    }
    const id = `${key.layer}.${key.module}`;
    const entry = found.get(id) ?? {};
    if (entry[key.which]) throw new Error(`LoRA adapter: ${t.name} given twice`);
    entry[key.which] = t;
    found.set(id, entry);
  }
  const out = new Map<string, { A: TensorData; B: TensorData }>();
  for (const [id, e] of found) {
    if (!e.A || !e.B)
      throw new Error(
        `LoRA adapter: layer ${id.split('.')[0]} ${id.split('.')[1]} has lora_${e.A ? 'A' : 'B'} without lora_${e.A ? 'B' : 'A'}`,
      );
    out.set(id, { A: e.A, B: e.B });
  }
  return out;
}
