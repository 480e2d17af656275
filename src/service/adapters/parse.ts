/**
 * Parsing a PEFT adapter: adapter_config.json read into the engine's LoraConfig, and
 * adapter_model.safetensors into tensors with PEFT key names.
 *
 * Adapters using PEFT features Hearth's LoRA kernels do not implement (DoRA, trained biases,
 * per-layer rank or alpha patterns, layer subsets, extra saved modules) are refused with an
 * error naming the feature, rather than served wrongly.
 *
 * Not here: a checkpoint as the engine's adapter (checkpoint-adapter.ts), applying adapters (the
 * engine), writing them (peft-files.ts).
 * Reference: docs/design.md "Engine principles" (LoRA, PEFT layout); PEFT LoraConfig fields.
 */
import type { LoraConfig } from '../../engine/model/lora/lora-config';
import { LORA_MAX_RANK } from '../../engine/kernels/lora';
import { ALL_LORA_MODULES, LORA_MODULES, loraModulePath, type LoraModule } from '../../engine/model/lora/peft-modules';
import { REGEX_LIMITS, regexHazard } from '../../engine/model/text/regex-hazard';
import type { TensorData } from '../../engine/tensor/tensor-data';
import { ADAPTER_CONFIG_FILE, ADAPTER_MODEL_FILE, readTensors } from './peft-files';

export class AdapterError extends Error {
  override name = 'AdapterError';
}

function isEmpty(v: unknown): boolean {
  return v == null || v === false || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && Object.keys(v).length === 0);
}

/** A `target_modules` pattern names a few projections: short, and within the safe regex subset. */
export const TARGET_MODULES_REGEX_LIMITS = { ...REGEX_LIMITS, maxLength: 256 };

/**
 * PEFT `target_modules`: a list of (suffixes of) module names, "all-linear", or a regex matched against
 * full names. "all-linear" and a regex resolve against `modules`, the base model's projections when
 * known (Phi-3's are the fused qkv_proj / gate_up_proj).
 */
function targetModules(value: unknown, where: string, modules: readonly string[]): string[] {
  if (value === 'all-linear') return [...modules];
  if (typeof value === 'string') {
    // The pattern comes from an uploaded file and runs on the engine thread: refuse what could
    // backtrack catastrophically (issue 10), before V8 compiles it.
    const hazard = regexHazard(value, TARGET_MODULES_REGEX_LIMITS);
    if (hazard) throw new AdapterError(`${where}: target_modules pattern is refused (${hazard}); list the module names instead`);
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${value})$`);
    } catch {
      throw new AdapterError(`${where}: target_modules "${value}" is not a valid regular expression`);
    }
    return modules.filter((m) => re.test(`model.layers.0.${loraModulePath(m as LoraModule)}`));
  }
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    throw new AdapterError(`${where}: target_modules must be a list of module names`);
  }
  const short = [...new Set((value as string[]).map((v) => v.split('.').pop()!))];
  const known: readonly string[] = ALL_LORA_MODULES;
  const unknown = short.filter((m) => !known.includes(m));
  if (unknown.length)
    throw new AdapterError(`${where}: target_modules ${unknown.join(', ')} are not projections Hearth can adapt (${known.join(', ')})`);
  return short;
}

/**
 * adapter_config.json -> LoraConfig; throws AdapterError naming the field or the unsupported feature.
 * `modules`: the base model's projections (engine `loraModulesOf`), for "all-linear" and regexes.
 */
export function parseAdapterConfig(json: unknown, where = ADAPTER_CONFIG_FILE, modules: readonly string[] = LORA_MODULES): LoraConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new AdapterError(`${where}: expected a JSON object`);
  const c = json as Record<string, unknown>;
  const rank = c.r;
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 1) throw new AdapterError(`${where}: "r" must be a positive integer`);
  if (rank > LORA_MAX_RANK) throw new AdapterError(`${where}: "r" is ${rank}; Hearth's LoRA kernels take ranks up to ${LORA_MAX_RANK}`);
  const alpha = c.lora_alpha ?? 8; // PEFT's default
  if (typeof alpha !== 'number' || !Number.isFinite(alpha)) throw new AdapterError(`${where}: "lora_alpha" must be a number`);
  for (const [field, feature] of [
    ['use_dora', 'DoRA'],
    ['rank_pattern', 'per-module ranks (rank_pattern)'],
    ['alpha_pattern', 'per-module alphas (alpha_pattern)'],
    ['layers_to_transform', 'adapting a subset of layers (layers_to_transform)'],
    ['modules_to_save', 'fully trained extra modules (modules_to_save)'],
  ] as const) {
    if (!isEmpty(c[field])) throw new AdapterError(`${where}: Hearth cannot serve adapters using ${feature}`);
  }
  if (c.bias !== undefined && c.bias !== 'none')
    throw new AdapterError(`${where}: Hearth cannot serve adapters with trained biases (bias "${String(c.bias)}")`);
  const targets = targetModules(c.target_modules ?? [...modules], where, modules);
  if (targets.length === 0) throw new AdapterError(`${where}: target_modules selects no projection`);
  return { rank, alpha, targetModules: targets, useRslora: c.use_rslora === true };
}

/** Reads every tensor of adapter_model.safetensors. */
export function parseAdapterModel(bytes: Uint8Array): Promise<TensorData[]> {
  return readTensors(bytes, ADAPTER_MODEL_FILE);
}
