/**
 * A LoRA adapter as PEFT's two files, the layout every Hearth checkpoint is stored and
 * downloaded in: `adapter_config.json` (PEFT LoraConfig fields) and `adapter_model.safetensors`
 * (lora_A [r, in] and lora_B [out, r] per module, PEFT key names, f32). Also the optimizer state
 * of a running job as safetensors bytes (for crash-safe progress).
 *
 * Not here: parsing an adapter (parse.ts, which these files must satisfy).
 * Reference: huggingface/peft LoraConfig and `save_pretrained` output.
 */
import type { LoraConfig as EngineLoraConfig } from '../../engine/model/lora/lora-config';
import { SafetensorsFile } from '../../engine/model/files/safetensors';
import { writeSafetensors } from '../../engine/model/files/safetensors-writer';
import type { TensorData } from '../../engine/tensor/tensor-data';
import type { OptimizerState } from '../../engine/train/types';
import type { LoraConfig as StoredLoraConfig } from '../../store/schema';

/** A PEFT adapter: `adapter_config.json` and `adapter_model.safetensors`, as bytes. */
export interface AdapterFiles {
  adapterConfig: Uint8Array;
  adapterModel: Uint8Array;
}

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_MODEL_FILE = 'adapter_model.safetensors';

/** The model record's LoRA settings as the engine takes them. */
export function engineLoraConfig(lora: StoredLoraConfig): EngineLoraConfig {
  return { rank: lora.r, alpha: lora.alpha, targetModules: [...lora.targetModules], useRslora: lora.useRslora ?? false };
}

/** PEFT's adapter_config.json for a causal-LM LoRA on `baseModel`. */
export function adapterConfigJson(baseModel: string, lora: EngineLoraConfig): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: lora.alpha,
    lora_dropout: 0,
    modules_to_save: null,
    peft_type: 'LORA',
    r: lora.rank,
    rank_pattern: {},
    revision: null,
    target_modules: [...lora.targetModules].sort(),
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: lora.useRslora,
  };
}

export function adapterFiles(baseModel: string, lora: EngineLoraConfig, tensors: readonly TensorData[]): AdapterFiles {
  return {
    adapterConfig: new TextEncoder().encode(JSON.stringify(adapterConfigJson(baseModel, lora), null, 2) + '\n'),
    adapterModel: writeSafetensors(tensors, { format: 'pt' }),
  };
}

export async function readTensors(bytes: Uint8Array, name: string): Promise<TensorData[]> {
  const file = await SafetensorsFile.open(bytes, name);
  const out: TensorData[] = [];
  for await (const t of file.tensors()) out.push(t);
  return out;
}

/** Optimizer state -> bytes (its step count travels beside it). */
export function optimizerBytes(state: OptimizerState): Uint8Array {
  return writeSafetensors(state.tensors, { format: 'pt' });
}

export async function optimizerFromBytes(bytes: Uint8Array, step: number): Promise<OptimizerState> {
  return { step, tensors: await readTensors(bytes, 'optimizer state') };
}
