/**
 * The slot layout of one LoRA adapter for a model (kernels/lora.ts `loraLayoutOf`): the model's
 * PEFT modules in storage order with their dims, grouped as the engine's fused projections take
 * them (one shrink and one expand per group): q|k|v, o, gate|up, down; a fused checkpoint (Phi-3)
 * has one module over each fused projection's whole output.
 *
 * Not here: the kernels' arithmetic over the layout (kernels/lora.ts), the pool (lora-pool.ts).
 */
import { loraLayoutOf, type LoraGroupName, type LoraLayout } from '../kernels/lora';
import type { ModelConfig } from '../model/config/model-config';
import { loraModuleDims, loraModulesOf, type LoraModule } from '../model/lora/peft-modules';

const LORA_GROUPS: Record<LoraGroupName, readonly LoraModule[]> = {
  qkv: ['q_proj', 'k_proj', 'v_proj'],
  o: ['o_proj'],
  gateUp: ['gate_proj', 'up_proj'],
  down: ['down_proj'],
};

const FUSED_LORA_GROUPS: Record<LoraGroupName, readonly LoraModule[]> = {
  qkv: ['qkv_proj'],
  o: ['o_proj'],
  gateUp: ['gate_up_proj'],
  down: ['down_proj'],
};

/** The pool layout of one adapter for a model: every module of every layer, targeted or not (zeros). */
export function loraLayout(cfg: ModelConfig): LoraLayout {
  const modules = loraModulesOf(cfg).map((m) => ({ module: m, ...loraModuleDims(cfg, m) }));
  return loraLayoutOf(modules, cfg.fusedProjections ? FUSED_LORA_GROUPS : LORA_GROUPS, cfg.numLayers);
}
