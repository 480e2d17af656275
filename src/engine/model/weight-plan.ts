/**
 * The weights a ModelConfig implies: every HF tensor name with its shape, in model order
 * (embedding, then per layer attention and MLP, then final norm and lm_head). The loader checks a
 * repository against it before handing out any weight; make-models writes exactly these tensors.
 * Shapes are HF's: nn.Linear weights are [out, in], norms and biases are vectors.
 * Not here: GPU layout and chunking (weights.ts), LoRA tensors (the trainer).
 */
import type { ModelConfig } from './config';
import { numel } from './tensor';

export interface PlannedWeight {
  name: string;
  shape: number[];
  /** lm_head.weight of a tied model: allowed in a file, never required (embed_tokens is used). */
  optional?: boolean;
}

export function weightPlan(c: ModelConfig): PlannedWeight[] {
  const C = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const F = c.intermediateSize;
  const out: PlannedWeight[] = [{ name: 'model.embed_tokens.weight', shape: [c.vocabSize, C] }];
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}`;
    out.push({ name: `${p}.input_layernorm.weight`, shape: [C] });
    out.push({ name: `${p}.self_attn.q_proj.weight`, shape: [q, C] });
    out.push({ name: `${p}.self_attn.k_proj.weight`, shape: [kv, C] });
    out.push({ name: `${p}.self_attn.v_proj.weight`, shape: [kv, C] });
    if (c.attentionBias) {
      out.push({ name: `${p}.self_attn.q_proj.bias`, shape: [q] });
      out.push({ name: `${p}.self_attn.k_proj.bias`, shape: [kv] });
      out.push({ name: `${p}.self_attn.v_proj.bias`, shape: [kv] });
    }
    if (c.qkNorm) {
      out.push({ name: `${p}.self_attn.q_norm.weight`, shape: [c.headDim] });
      out.push({ name: `${p}.self_attn.k_norm.weight`, shape: [c.headDim] });
    }
    out.push({ name: `${p}.self_attn.o_proj.weight`, shape: [C, q] });
    if (c.outputBias) out.push({ name: `${p}.self_attn.o_proj.bias`, shape: [C] });
    out.push({ name: `${p}.post_attention_layernorm.weight`, shape: [C] });
    out.push({ name: `${p}.mlp.gate_proj.weight`, shape: [F, C] });
    out.push({ name: `${p}.mlp.up_proj.weight`, shape: [F, C] });
    out.push({ name: `${p}.mlp.down_proj.weight`, shape: [C, F] });
    if (c.mlpBias) {
      out.push({ name: `${p}.mlp.gate_proj.bias`, shape: [F] });
      out.push({ name: `${p}.mlp.up_proj.bias`, shape: [F] });
      out.push({ name: `${p}.mlp.down_proj.bias`, shape: [C] });
    }
  }
  out.push({ name: 'model.norm.weight', shape: [C] });
  out.push({ name: 'lm_head.weight', shape: [c.vocabSize, C], optional: c.tieWordEmbeddings });
  return out;
}

/** Parameters of the model (a tied lm_head counted once), as `model.num_parameters()` reports. */
export function parameterCount(c: ModelConfig): number {
  return weightPlan(c)
    .filter((w) => !w.optional)
    .reduce((s, w) => s + numel(w.shape), 0);
}
