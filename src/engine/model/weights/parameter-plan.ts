/**
 * The parameter plan: every HF tensor name the engine expects for a config, with its shape, in a
 * fixed order (docs/style.md "For Hearth" 3). WeightSet validates uploads against it, the reference
 * forward reads by these names, and the loader checks a repository before any upload
 * (`checkAgainstPlan`). No GPU here.
 * Not here: where the tensors go on the GPU (weight-layout.ts, weight-set.ts).
 */
import type { ModelConfig } from '../config/model-config';
import type { TensorData } from '../../tensor/tensor-data';

export interface ParameterSpec {
  /** HF name, e.g. model.layers.3.mlp.up_proj.weight. */
  name: string;
  /** Expected shape, outermost first ([out, in] for a Linear weight). */
  shape: number[];
}

/** Names of one decoder layer's tensors (the prefix is model.layers.<l>). */
export function layerNames(l: number) {
  const p = `model.layers.${l}`;
  return {
    inputNorm: `${p}.input_layernorm.weight`,
    q: `${p}.self_attn.q_proj.weight`,
    k: `${p}.self_attn.k_proj.weight`,
    v: `${p}.self_attn.v_proj.weight`,
    /** Phi-3's fused [q; k; v] rows (config.fusedProjections), in place of q, k, v. */
    qkv: `${p}.self_attn.qkv_proj.weight`,
    qBias: `${p}.self_attn.q_proj.bias`,
    kBias: `${p}.self_attn.k_proj.bias`,
    vBias: `${p}.self_attn.v_proj.bias`,
    qNorm: `${p}.self_attn.q_norm.weight`,
    kNorm: `${p}.self_attn.k_norm.weight`,
    o: `${p}.self_attn.o_proj.weight`,
    oBias: `${p}.self_attn.o_proj.bias`,
    postNorm: `${p}.post_attention_layernorm.weight`,
    // Gemma 3's sandwich norms (its post_attention_layernorm normalises the attention output instead).
    preFfnNorm: `${p}.pre_feedforward_layernorm.weight`,
    postFfnNorm: `${p}.post_feedforward_layernorm.weight`,
    gate: `${p}.mlp.gate_proj.weight`,
    up: `${p}.mlp.up_proj.weight`,
    /** Phi-3's fused [gate; up] rows (modeling_phi3.py Phi3MLP: gate is the first half), in place of gate, up. */
    gateUp: `${p}.mlp.gate_up_proj.weight`,
    down: `${p}.mlp.down_proj.weight`,
    gateBias: `${p}.mlp.gate_proj.bias`,
    upBias: `${p}.mlp.up_proj.bias`,
    downBias: `${p}.mlp.down_proj.bias`,
  };
}

export const EMBED_NAME = 'model.embed_tokens.weight';
export const FINAL_NORM_NAME = 'model.norm.weight';
export const LM_HEAD_NAME = 'lm_head.weight';

/** Every tensor the model needs, in file order of a typical HF checkpoint. */
export function planParameters(cfg: ModelConfig): ParameterSpec[] {
  const C = cfg.hiddenSize;
  const HS = cfg.headDim;
  const qRows = cfg.numHeads * HS;
  const kvRows = cfg.numKvHeads * HS;
  const F = cfg.intermediateSize;
  const plan: ParameterSpec[] = [{ name: EMBED_NAME, shape: [cfg.vocabSize, C] }];
  for (let l = 0; l < cfg.numLayers; l++) {
    const n = layerNames(l);
    plan.push({ name: n.inputNorm, shape: [C] });
    if (cfg.fusedProjections) plan.push({ name: n.qkv, shape: [qRows + 2 * kvRows, C] });
    else plan.push({ name: n.q, shape: [qRows, C] }, { name: n.k, shape: [kvRows, C] }, { name: n.v, shape: [kvRows, C] });
    if (cfg.attentionBias) {
      plan.push({ name: n.qBias, shape: [qRows] }, { name: n.kBias, shape: [kvRows] }, { name: n.vBias, shape: [kvRows] });
    }
    if (cfg.qkNorm) plan.push({ name: n.qNorm, shape: [HS] }, { name: n.kNorm, shape: [HS] });
    plan.push({ name: n.o, shape: [C, qRows] });
    if (cfg.outputBias) plan.push({ name: n.oBias, shape: [C] });
    plan.push({ name: n.postNorm, shape: [C] });
    if (cfg.sandwichNorms) plan.push({ name: n.preFfnNorm, shape: [C] });
    if (cfg.fusedProjections) plan.push({ name: n.gateUp, shape: [2 * F, C] });
    else plan.push({ name: n.gate, shape: [F, C] }, { name: n.up, shape: [F, C] });
    plan.push({ name: n.down, shape: [C, F] });
    if (cfg.mlpBias) plan.push({ name: n.gateBias, shape: [F] }, { name: n.upBias, shape: [F] }, { name: n.downBias, shape: [C] });
    if (cfg.sandwichNorms) plan.push({ name: n.postFfnNorm, shape: [C] });
  }
  plan.push({ name: FINAL_NORM_NAME, shape: [C] });
  if (!cfg.tieWordEmbeddings) plan.push({ name: LM_HEAD_NAME, shape: [cfg.vocabSize, C] });
  return plan;
}

/**
 * The engine's name of a checkpoint tensor, or null for a tensor of a part the engine does not run.
 * A multimodal Gemma 3 checkpoint (Gemma3ForConditionalGeneration) keeps the text model under
 * `language_model.` (transformers < 4.52: language_model.model.layers.0...) or `model.language_model.`
 * (later: model.language_model.layers.0...) beside `vision_tower` and `multi_modal_projector`.
 */
export function checkpointTensorName(cfg: ModelConfig, name: string): string | null {
  if (!cfg.multimodalCheckpoint) return name;
  if (name.startsWith('language_model.')) return name.slice('language_model.'.length);
  if (name.startsWith('model.language_model.')) return `model.${name.slice('model.language_model.'.length)}`;
  if (/^(model\.)?(vision_tower|multi_modal_projector)\./.test(name)) return null;
  return name;
}

/**
 * Tensors a checkpoint may carry that the engine does not use: old Llama checkpoints save the rotary
 * inv_freq buffer, and some tied checkpoints also save lm_head (a copy of the embedding).
 */
export function isIgnorableTensor(cfg: ModelConfig, name: string): boolean {
  if (/^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/.test(name)) return true;
  return cfg.tieWordEmbeddings && name === LM_HEAD_NAME;
}

export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * Checks a set of tensors against the plan. Returns the first problem as a sentence ("missing tensor
 * ...", "tensor ...: shape [..] expected [..]", "unexpected tensor ..."), or null when all is well.
 */
export function checkAgainstPlan(cfg: ModelConfig, tensors: Iterable<Pick<TensorData, 'name' | 'shape'>>): string | null {
  const plan = new Map(planParameters(cfg).map((p) => [p.name, p.shape]));
  const seen = new Set<string>();
  for (const t of tensors) {
    const want = plan.get(t.name);
    if (!want) {
      if (isIgnorableTensor(cfg, t.name)) continue;
      return `unexpected tensor ${t.name} for a ${cfg.arch} model with this config`;
    }
    if (seen.has(t.name)) return `tensor ${t.name} given twice`;
    seen.add(t.name);
    if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i])) {
      return `tensor ${t.name}: shape ${shapeText(t.shape)} expected ${shapeText(want)}`;
    }
  }
  for (const name of plan.keys()) if (!seen.has(name)) return `missing tensor ${name}`;
  return null;
}
