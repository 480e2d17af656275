/**
 * Constants as the kernels read them, derived from the config: a 1-D tensor's values after Gemma's
 * norm offset and folded softmax scale (`deviceVector`), and the embedding scale (`embeddingScaleOf`).
 * WeightSet writes the first into its vectors buffer; the forward graphs, the trainer and the
 * reference read the second.
 */
import type { ModelConfig } from '../config/model-config';

/**
 * A 1-D tensor as the kernels read it from `vectors`: Gemma's norms are x * (1 + w), so the offset is
 * added here once (in f32, as Gemma3RMSNorm computes 1.0 + weight.float()); and Gemma's softmax scale
 * query_pre_attn_scalar^-1/2 is folded into q_norm, times sqrt(HS) that the attention kernels apply
 * as 1/sqrt(HS): q_norm's output is the only input of q, RoPE is linear, so the scores are exact.
 */
export function deviceVector(cfg: ModelConfig, name: string, values: Float32Array): Float32Array {
  const isNorm = name.endsWith('norm.weight');
  const offset = isNorm ? (cfg.normWeightOffset ?? 0) : 0;
  const scale =
    name.endsWith('self_attn.q_norm.weight') && cfg.attentionScale !== undefined ? cfg.attentionScale * Math.sqrt(cfg.headDim) : 1;
  if (offset === 0 && scale === 1) return values;
  return values.map((w) => Math.fround(Math.fround(offset + w) * scale));
}

/**
 * Gemma's embedding normaliser, sqrt(hidden_size) in f32 (1 without one). transformers multiplies by
 * embed_scale.to(weight.dtype): the weights' dtype as the model runs, which is f32 when it runs in
 * f32 (torch_dtype=float32, whatever the file's dtype), and llama.cpp scales by sqrtf(n_embd). Hearth
 * computes in f32 from any file dtype, so it is f32 here too; rounding it to the file's bf16 (25.25
 * for sqrt(640) = 25.298) moved every logprob by up to 1.4e-2 nats (issue 21).
 */
export function embeddingScaleOf(cfg: Pick<ModelConfig, 'embeddingScale'>): number {
  return cfg.embeddingScale === undefined ? 1 : Math.fround(cfg.embeddingScale);
}
