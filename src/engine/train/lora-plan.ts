/**
 * The trainer's LoRA parameter plan (docs/style.md "For Hearth" 3): every adapted matrix of a model, its
 * PEFT name, shape and element offset in one flat f32 buffer, which the parameters, their gradients
 * and both AdamW moments share (one allocation each, the same views).
 *
 * Layout, per layer, per *group* of modules that read the same input (the base weights are fused
 * the same way, model/weights/weight-set.ts): qkv (input x1 = input_layernorm(h)), o (input: attention output),
 * gateUp (input x2 = post_attention_layernorm(h)), down (input: silu(gate) * up). A group's A
 * matrices are stored back to back, so they form one stacked matrix [n r, in] and the shrink
 * u = x A^T of every module of the group is one GEMM; each B [out, r] follows, and its update
 * s u B^T lands in the module's column range [col0, col0 + out) of the fused base output.
 *
 * Also here: PEFT's default initialisation (A kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(in),
 * 1/sqrt(in)); B = 0), seeded, and conversion between the flat buffer and PEFT TensorData.
 *
 * Not here: GPU buffers (lora-state.ts), the math (graph-forward.ts / graph-backward.ts).
 * Reference: huggingface/peft src/peft/tuners/lora/layer.py (reset_lora_parameters).
 */
import type { LoraConfig } from '../model/lora/lora-config';
import type { ModelConfig } from '../model/config/model-config';
import { tensorFromF32, tensorToF32 } from '../tensor/tensor-data';
import type { TensorData } from '../tensor/tensor-data';
import {
  checkLoraTargets,
  ALL_LORA_MODULES,
  loraModuleDims,
  loraModulesOf,
  loraTensorName,
  type LoraModule,
} from '../model/lora/peft-modules';
import { groupLoraTensors } from '../model/lora/adapter-tensors';
import { loraScale } from '../model/lora/lora-config';
import { Rng } from '../tensor/random';

export type LoraGroupName = 'qkv' | 'o' | 'gateUp' | 'down';

/** Which group a module belongs to and where its output sits in the group's fused base output. */
const MODULE_GROUP: Record<LoraModule, LoraGroupName> = {
  q_proj: 'qkv',
  k_proj: 'qkv',
  v_proj: 'qkv',
  o_proj: 'o',
  gate_proj: 'gateUp',
  up_proj: 'gateUp',
  down_proj: 'down',
  qkv_proj: 'qkv',
  gate_up_proj: 'gateUp',
};

export const LORA_GROUPS: readonly LoraGroupName[] = ['qkv', 'o', 'gateUp', 'down'];

/** One adapted module of one layer. Offsets are f32 elements in the flat parameter buffer. */
export interface LoraModulePlan {
  layer: number;
  module: LoraModule;
  in: number;
  out: number;
  /** First column of this module's output in the group's fused base output. */
  col0: number;
  /** Its A [r, in] at aOffset (inside the group's stacked A); rows aRow .. aRow + r of the stack. */
  aOffset: number;
  aRow: number;
  /** Its B [out, r]. */
  bOffset: number;
  nameA: string;
  nameB: string;
}

/** The adapted modules of one group of one layer (null in LoraLayerPlan when none is targeted). */
export interface LoraGroupPlan {
  group: LoraGroupName;
  /** Input width (C, NH HS or F). */
  in: number;
  /** Width of the fused base output the B updates write into. */
  outWidth: number;
  /** Stacked A [rows = modules.length * r, in] at aOffset. */
  aOffset: number;
  rows: number;
  modules: LoraModulePlan[];
}

export type LoraLayerPlan = Record<LoraGroupName, LoraGroupPlan | null>;

export interface LoraTensorSpec {
  /** PEFT key, e.g. base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight. */
  name: string;
  shape: [number, number];
  offset: number;
  /** Fan-in for the kaiming-uniform init of an A; null for a B (zero init). */
  fanIn: number | null;
}

export interface LoraPlan {
  config: LoraConfig;
  rank: number;
  /** s = alpha / r, or alpha / sqrt(r) with rsLoRA. */
  scale: number;
  layers: LoraLayerPlan[];
  /** Every tensor in buffer order (PEFT names). */
  tensors: LoraTensorSpec[];
  /** Elements of the flat buffer. */
  elements: number;
  /** Widest stacked A of any group (rows): sizes the backward's g B scratch. */
  maxGroupRows: number;
}

/** Validates a LoraConfig against what the trainer supports; throws naming the field. */
export function checkLoraConfig(lora: LoraConfig): void {
  if (!Number.isInteger(lora.rank) || lora.rank < 1) throw new Error(`LoRA: rank ${lora.rank} must be a positive integer`);
  if (!Number.isFinite(lora.alpha)) throw new Error(`LoRA: alpha ${lora.alpha} must be a finite number`);
  if (lora.targetModules.length === 0) throw new Error('LoRA: target_modules is empty');
  const unknown = lora.targetModules.filter((m) => !(ALL_LORA_MODULES as readonly string[]).includes(m));
  if (unknown.length)
    throw new Error(`LoRA: target modules ${unknown.join(', ')} are not projections Hearth can adapt (${ALL_LORA_MODULES.join(', ')})`);
}

export function planLora(cfg: ModelConfig, lora: LoraConfig): LoraPlan {
  checkLoraConfig(lora);
  checkLoraTargets(cfg, lora.targetModules);
  const r = lora.rank;
  const targets = new Set(lora.targetModules);
  const C = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  const groupIn: Record<LoraGroupName, number> = { qkv: C, o: q, gateUp: C, down: F };
  const groupWidth: Record<LoraGroupName, number> = { qkv: q + 2 * kv, o: C, gateUp: 2 * F, down: C };
  // A fused module (Phi-3's qkv_proj, gate_up_proj) is one A and one B over its whole fused output.
  const col0: Record<LoraModule, number> = {
    q_proj: 0,
    k_proj: q,
    v_proj: q + kv,
    o_proj: 0,
    gate_proj: 0,
    up_proj: F,
    down_proj: 0,
    qkv_proj: 0,
    gate_up_proj: 0,
  };
  const tensors: LoraTensorSpec[] = [];
  let offset = 0;
  let maxGroupRows = 0;
  const layers: LoraLayerPlan[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const layer = { qkv: null, o: null, gateUp: null, down: null } as LoraLayerPlan;
    for (const group of LORA_GROUPS) {
      const mods = loraModulesOf(cfg).filter((m) => MODULE_GROUP[m] === group && targets.has(m));
      if (mods.length === 0) continue;
      const aOffset = offset;
      const modules: LoraModulePlan[] = mods.map((m, j) => {
        const d = loraModuleDims(cfg, m);
        const nameA = loraTensorName(l, m, 'A');
        tensors.push({ name: nameA, shape: [r, d.in], offset: aOffset + j * r * d.in, fanIn: d.in });
        return {
          layer: l,
          module: m,
          in: d.in,
          out: d.out,
          col0: col0[m],
          aOffset: aOffset + j * r * d.in,
          aRow: j * r,
          bOffset: 0,
          nameA,
          nameB: loraTensorName(l, m, 'B'),
        };
      });
      offset += mods.length * r * groupIn[group];
      for (const m of modules) {
        m.bOffset = offset;
        tensors.push({ name: m.nameB, shape: [m.out, r], offset, fanIn: null });
        offset += m.out * r;
      }
      layer[group] = { group, in: groupIn[group], outWidth: groupWidth[group], aOffset, rows: mods.length * r, modules };
      maxGroupRows = Math.max(maxGroupRows, mods.length * r);
    }
    layers.push(layer);
  }
  return { config: lora, rank: r, scale: loraScale(lora.alpha, r, lora.useRslora), layers, tensors, elements: offset, maxGroupRows };
}

/** PEFT's default init into a flat buffer: A ~ U(-1/sqrt(in), 1/sqrt(in)) in plan order from `seed`, B = 0. */
export function initLoraParameters(plan: LoraPlan, seed: number): Float32Array {
  const out = new Float32Array(plan.elements);
  const rng = new Rng(seed);
  for (const t of plan.tensors) {
    if (t.fanIn === null) continue;
    const bound = 1 / Math.sqrt(t.fanIn);
    const n = t.shape[0] * t.shape[1];
    for (let i = 0; i < n; i++) out[t.offset + i] = (2 * rng.uniform() - 1) * bound;
  }
  return out;
}

/**
 * Matches a PEFT adapter's tensors (any dtype, PEFT key names, with or without the adapter-name
 * segment) to the plan: every planned tensor must be present with its shape and nothing else; an
 * adapter for other modules or another rank is refused with the name of the first mismatch.
 * Allocates nothing sized by the plan (issue 26: the flat buffer was allocated before this check,
 * so an adapter config naming a huge rank over a large model allocated gigabytes first).
 */
function matchLoraTensors(plan: LoraPlan, cfg: ModelConfig, tensors: Iterable<TensorData>): Map<string, { A: TensorData; B: TensorData }> {
  const grouped = groupLoraTensors(cfg, plan.rank, tensors);
  const seen = new Set<string>();
  for (const layer of plan.layers) {
    for (const g of LORA_GROUPS) {
      for (const m of layer[g]?.modules ?? []) {
        if (!grouped.has(`${m.layer}.${m.module}`)) {
          throw new Error(`LoRA adapter: missing ${m.nameA} (the session targets ${plan.config.targetModules.join(', ')})`);
        }
        seen.add(`${m.layer}.${m.module}`);
      }
    }
  }
  for (const id of grouped.keys()) {
    if (!seen.has(id)) {
      const [l, module] = id.split('.');
      throw new Error(
        `LoRA adapter: it adapts ${module} of layer ${l}, which the session does not target (${plan.config.targetModules.join(', ')})`,
      );
    }
  }
  return grouped;
}

/** Checks an adapter's tensors against the plan (see matchLoraTensors) without building its buffer. */
export function checkLoraTensors(plan: LoraPlan, cfg: ModelConfig, tensors: Iterable<TensorData>): void {
  matchLoraTensors(plan, cfg, tensors);
}

/**
 * A PEFT adapter's tensors into a flat buffer, once they match the plan (matchLoraTensors): the
 * buffer is then exactly as large as the tensors the file holds.
 */
export function loraFromTensors(plan: LoraPlan, cfg: ModelConfig, tensors: Iterable<TensorData>): Float32Array {
  const grouped = matchLoraTensors(plan, cfg, tensors);
  const out = new Float32Array(plan.elements);
  for (const layer of plan.layers) {
    for (const g of LORA_GROUPS) {
      for (const m of layer[g]?.modules ?? []) {
        const pair = grouped.get(`${m.layer}.${m.module}`)!;
        out.set(tensorToF32(pair.A), m.aOffset);
        out.set(tensorToF32(pair.B), m.bOffset);
      }
    }
  }
  return out;
}

/** The flat buffer as PEFT tensors (f32, plan order), optionally with a suffix on every name. */
export function loraToTensors(plan: LoraPlan, values: Float32Array, suffix = ''): TensorData[] {
  if (values.length < plan.elements) throw new Error(`LoRA: ${values.length} values for a plan of ${plan.elements}`);
  return plan.tensors.map((t) =>
    tensorFromF32(`${t.name}${suffix}`, [...t.shape], values.subarray(t.offset, t.offset + t.shape[0] * t.shape[1]), 'f32'),
  );
}

/** Reads tensors named `<PEFT name><suffix>` (f32 state such as AdamW moments) into a flat buffer. */
export function flatFromSuffixed(plan: LoraPlan, tensors: Iterable<TensorData>, suffix: string): Float32Array {
  const byName = new Map<string, TensorData>();
  for (const t of tensors) if (t.name.endsWith(suffix)) byName.set(t.name, t);
  const out = new Float32Array(plan.elements);
  for (const t of plan.tensors) {
    const found = byName.get(`${t.name}${suffix}`);
    if (!found) throw new Error(`optimizer state: missing ${t.name}${suffix}`);
    if (found.shape.length !== 2 || found.shape[0] !== t.shape[0] || found.shape[1] !== t.shape[1]) {
      throw new Error(`optimizer state: ${found.name} has shape [${found.shape.join(', ')}], expected [${t.shape.join(', ')}]`);
    }
    out.set(tensorToF32(found), t.offset);
    byName.delete(found.name);
  }
  if (byName.size) throw new Error(`optimizer state: unexpected ${[...byName.keys()][0]}`);
  return out;
}

/** Trainable parameter count (what TrainingSession.parameterCount reports). */
export function loraParameterCount(plan: LoraPlan): number {
  return plan.elements;
}

export type { LoraModule };
