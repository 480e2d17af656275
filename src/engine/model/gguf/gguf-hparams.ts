/**
 * A model's hyperparameters as the GGUF metadata keys llama.cpp's convert_hf_to_gguf.py writes for
 * the llama-style families (llama, qwen2, qwen3): block count, context, widths, heads, RoPE base
 * and linear scaling, norm epsilon, vocabulary size; and Llama 3's frequency scaling as the
 * divisors of its `rope_freqs.weight` tensor. Shared by every writer of whole-model GGUF files
 * (the CPU backend's conversion, the bench's peer models).
 *
 * Not here: the tokenizer keys (each writer has its own vocabulary), tensor names (gguf-model.ts).
 */
import type { ModelConfig } from '../config/model-config';
import type { GgufMetadataEntry } from './gguf-reader';
import { gv } from './gguf-writer';

/** `general.architecture`, `general.alignment` (32) and the `<arch>.*` hyperparameter keys of `c`. */
export function ggufHyperparameters(c: ModelConfig, arch: string): Array<[string, GgufMetadataEntry]> {
  const a = arch;
  const md: Array<[string, GgufMetadataEntry]> = [
    ['general.architecture', gv.str(a)],
    ['general.alignment', gv.u32(32)],
    [`${a}.block_count`, gv.u32(c.numLayers)],
    [`${a}.context_length`, gv.u32(c.maxPositionEmbeddings)],
    [`${a}.embedding_length`, gv.u32(c.hiddenSize)],
    [`${a}.feed_forward_length`, gv.u32(c.intermediateSize)],
    [`${a}.attention.head_count`, gv.u32(c.numHeads)],
    [`${a}.attention.head_count_kv`, gv.u32(c.numKvHeads)],
    [`${a}.attention.key_length`, gv.u32(c.headDim)],
    [`${a}.attention.value_length`, gv.u32(c.headDim)],
    [`${a}.rope.dimension_count`, gv.u32(c.headDim)],
    [`${a}.rope.freq_base`, gv.f32(c.ropeTheta)],
    [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(c.rmsNormEps)],
    [`${a}.vocab_size`, gv.u32(c.vocabSize)],
  ];
  if (c.ropeScaling?.type === 'linear') {
    md.push([`${a}.rope.scaling.type`, gv.str('linear')], [`${a}.rope.scaling.factor`, gv.f32(c.ropeScaling.factor)]);
  }
  return md;
}

/** convert_hf_to_gguf.py's Llama 3 `rope_freqs`: one divisor per rotary frequency (null without such scaling). */
export function llama3RopeFactors(c: ModelConfig): Float32Array | null {
  const s = c.ropeScaling;
  if (s?.type === 'freq_factors') return Float32Array.from(s.factors);
  if (s?.type !== 'llama3') return null;
  const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  const out = new Float32Array(c.headDim / 2);
  for (let i = 0; i < out.length; i++) {
    // 2π / inv_freq, inv_freq = theta^(-2i/HS).
    const wavelen = 2 * Math.PI * c.ropeTheta ** ((2 * i) / c.headDim);
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = s.factor;
    else {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}
