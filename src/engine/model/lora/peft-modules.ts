/**
 * The modules a LoRA adapts, in PEFT's names: which projections a model has (separate or fused),
 * their input and output widths, and the adapter_model.safetensors key of each A and B matrix.
 * The one table that the trainer, the GPU adapter pool, the kernels' tests, the reference and the
 * adapter files (export, import, GGUF) all read.
 * Not here: checking an adapter's tensors (adapter-tensors.ts), the scale (lora-config.ts).
 */
import type { ModelConfig } from '../config/model-config';

/**
 * The projections of a decoder layer, in PEFT's names and the order the engine stores them: the
 * separate q/k/v and gate/up of most families, and the fused `qkv_proj` / `gate_up_proj` Linears of
 * checkpoints that store them fused (Phi-3, modeling_phi3.py), where PEFT adapts the fused module
 * with one A and one B over all its rows. A model has one set or the other (`loraModulesOf`).
 */
export const LORA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export const FUSED_LORA_MODULES = ['qkv_proj', 'gate_up_proj'] as const;
export type LoraModule = (typeof LORA_MODULES)[number] | (typeof FUSED_LORA_MODULES)[number];
/** Every module name of either layout. */
export const ALL_LORA_MODULES: readonly LoraModule[] = [...LORA_MODULES, ...FUSED_LORA_MODULES];

const FUSED_MODULES: readonly LoraModule[] = ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'];

/** The modules a LoRA can adapt in this model, in storage order. */
export function loraModulesOf(cfg: Pick<ModelConfig, 'fusedProjections'>): readonly LoraModule[] {
  return cfg.fusedProjections ? FUSED_MODULES : LORA_MODULES;
}

/** Throws unless every target is a module of this model (naming the model's modules). */
export function checkLoraTargets(cfg: Pick<ModelConfig, 'fusedProjections' | 'arch'>, targets: readonly string[]): void {
  const valid = loraModulesOf(cfg);
  const unknown = targets.filter((m) => !(valid as readonly string[]).includes(m));
  if (unknown.length) {
    throw new Error(`LoRA: target modules ${unknown.join(', ')} are not projections of this ${cfg.arch} model (${valid.join(', ')})`);
  }
}

const MODULE_PATHS: Record<LoraModule, string> = {
  q_proj: 'self_attn.q_proj',
  k_proj: 'self_attn.k_proj',
  v_proj: 'self_attn.v_proj',
  o_proj: 'self_attn.o_proj',
  gate_proj: 'mlp.gate_proj',
  up_proj: 'mlp.up_proj',
  down_proj: 'mlp.down_proj',
  qkv_proj: 'self_attn.qkv_proj',
  gate_up_proj: 'mlp.gate_up_proj',
};

/** Input and output widths of a module for a config. */
export function loraModuleDims(cfg: ModelConfig, module: LoraModule): { in: number; out: number } {
  const C = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  switch (module) {
    case 'q_proj':
      return { in: C, out: q };
    case 'k_proj':
    case 'v_proj':
      return { in: C, out: kv };
    case 'o_proj':
      return { in: q, out: C };
    case 'gate_proj':
    case 'up_proj':
      return { in: C, out: F };
    case 'down_proj':
      return { in: F, out: C };
    case 'qkv_proj':
      return { in: C, out: q + 2 * kv };
    case 'gate_up_proj':
      return { in: C, out: 2 * F };
  }
}

/** The module's path inside a decoder layer (`self_attn.q_proj`), what a target_modules regex matches. */
export function loraModulePath(module: LoraModule): string {
  return MODULE_PATHS[module];
}

/** PEFT's key of a LoRA matrix: base_model.model.model.layers.<l>.self_attn.q_proj.lora_A.weight. */
export function loraTensorName(layer: number, module: LoraModule, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${MODULE_PATHS[module]}.lora_${which}.weight`;
}

// The text model of a multimodal Gemma 3 (Gemma3ForConditionalGeneration) sits at model.language_model.layers
// (transformers >= 4.52) or language_model.model.layers in PEFT's keys.
const KEY =
  /^(?:base_model\.model\.)?(?:model\.language_model\.|language_model\.model\.|model\.)layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.[\w-]+)?\.weight$/;

/** The (layer, module, A|B) a PEFT key names, or null for a key that is not a LoRA matrix. */
export function parseLoraTensorName(name: string): { layer: number; module: LoraModule; which: 'A' | 'B' } | null {
  const m = KEY.exec(name);
  if (!m) return null;
  const module = m[3] as LoraModule;
  if (!(ALL_LORA_MODULES as readonly string[]).includes(module) || MODULE_PATHS[module] !== `${m[2]}.${module}`) return null;
  return { layer: Number(m[1]), module, which: m[4] as 'A' | 'B' };
}
