// Tiny random Qwen3 and Llama models as GGUF files (every projection in one GGML type) together with
// the same weights dequantized into the HF layout, so Hearth's reference forward and llama.cpp can
// run the very same numbers. Llama files are written as llama.cpp's converter writes them: q/k rows
// permuted for its interleaved RoPE, and Llama 3's frequency scaling as `rope_freqs.weight`. The
// tokenizer is GPT-2 byte-level: the 256 byte characters plus a few merged tokens, enough for
// llama.cpp to build its vocabulary.
import { BYTE_TO_CHAR } from '../../../src/engine/model/text/byte-level';
import type { ModelConfig } from '../../../src/engine/model/config/model-config';
import { tensorFromF32 } from '../../../src/engine/tensor/tensor-data';
import { permuteRows } from '../../../src/engine/model/gguf/gguf-model';
import { gv, writeGguf, type GgufTensorInput } from '../../../src/engine/model/gguf/gguf-writer';
import type { TensorData } from '../../../src/engine/tensor/tensor-data';
import { layerNames } from '../../../src/engine/model/weights/parameter-plan';
import { dequantize } from '../../../src/engine/model/quant/dequant';
import { Rng } from '../../../src/engine/tensor/random';
import { randomBlocks } from '../../../src/engine/reference/random-blocks';
import { testConfig } from '../../../src/engine/reference/random-model';

/** K-quant rows are 256 elements, so every projection's input size is a multiple of 256. */
export function ggufTestConfig(arch: 'qwen3' | 'llama' = 'qwen3', numLayers = 2): ModelConfig {
  return testConfig(arch, {
    hiddenSize: 256,
    numLayers,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 64,
    intermediateSize: 512,
    vocabSize: 264,
    ropeTheta: 1_000_000,
    rmsNormEps: 1e-6,
    maxPositionEmbeddings: 512,
    tieWordEmbeddings: arch === 'qwen3',
    eosTokenIds: [263],
  });
}

/** Llama 3-style divisors: the highest frequencies kept, the rest divided by up to 8. The blend starts
 *  at frequency 2 (not where Llama 3's does) so that a 14-token prompt already turns far enough for a
 *  missing divisor to change the logits. */
export const LLAMA3_FREQ_FACTORS = Array.from({ length: 32 }, (_, i) => Math.fround(i < 2 ? 1 : i > 12 ? 8 : 1 + (7 * (i - 2)) / 10));

export const EXTRA_TOKENS = ['ab', 'Ġt', 'he', 'in', 'er', 'on', 'at', '<|endoftext|>'];
export const MERGES = ['a b', 'Ġ t', 'h e', 'i n', 'e r', 'o n', 'a t'];

export interface GgufFixture {
  config: ModelConfig;
  gguf: Uint8Array;
  /** The same weights in the HF layout, f32. */
  tensors: TensorData[];
}

/** A random Qwen3 (or Llama) GGUF whose token embedding is `embedType` and whose seven projections
 *  per layer (and Llama's lm_head) are `weightType`, or the type it gives for each GGUF tensor name
 *  (a mix, as llama.cpp's Q4_K_M files mix types); norms f32. */
export function randomGguf(
  weightType: string | ((gguf: string) => string),
  seed: number,
  embedType = 'F32',
  arch: 'qwen3' | 'llama' = 'qwen3',
  numLayers = 2,
): GgufFixture {
  const cfg = ggufTestConfig(arch, numLayers);
  const typeOf = typeof weightType === 'string' ? () => weightType : weightType;
  const rng = new Rng(seed);
  const { hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS, intermediateSize: F, vocabSize: V } = cfg;
  const ggufTensors: GgufTensorInput[] = [];
  const hf: TensorData[] = [];
  const add = (gguf: string, hfName: string, shape: number[], type: string | null, amplitude: number, permuteHeads = 0) => {
    type ??= typeOf(gguf);
    const elements = shape.reduce((a, b) => a * b, 1);
    const data = randomBlocks(type, elements, amplitude, rng);
    // ggml's ne is the HF shape reversed (ne[0] = the innermost, row length); the bytes are the same
    // up to llama's q/k row permutation.
    const stored = permuteHeads ? permuteRows(data, permuteHeads, HS) : data;
    ggufTensors.push({ name: gguf, ne: [...shape].reverse(), type, data: stored });
    hf.push(tensorFromF32(hfName, shape, dequantize(type, data, elements), 'f32'));
  };
  const norm = (gguf: string, hfName: string, n: number) => {
    const values = Float32Array.from({ length: n }, () => 1 + 0.2 * rng.normal());
    const data = new Uint8Array(values.buffer);
    ggufTensors.push({ name: gguf, ne: [n], type: 'F32', data });
    hf.push(tensorFromF32(hfName, [n], values, 'f32'));
  };
  const w = (x: number) => 2 / Math.sqrt(x);
  add('token_embd.weight', 'model.embed_tokens.weight', [V, C], embedType, 2);
  for (let l = 0; l < cfg.numLayers; l++) {
    const n = layerNames(l);
    const b = `blk.${l}`;
    norm(`${b}.attn_norm.weight`, n.inputNorm, C);
    const permute = arch === 'llama';
    add(`${b}.attn_q.weight`, n.q, [NH * HS, C], null, w(C), permute ? NH : 0);
    add(`${b}.attn_k.weight`, n.k, [NKV * HS, C], null, w(C), permute ? NKV : 0);
    add(`${b}.attn_v.weight`, n.v, [NKV * HS, C], null, w(C));
    if (cfg.qkNorm) {
      norm(`${b}.attn_q_norm.weight`, n.qNorm, HS);
      norm(`${b}.attn_k_norm.weight`, n.kNorm, HS);
    }
    add(`${b}.attn_output.weight`, n.o, [C, NH * HS], null, w(NH * HS));
    norm(`${b}.ffn_norm.weight`, n.postNorm, C);
    add(`${b}.ffn_gate.weight`, n.gate, [F, C], null, w(C));
    add(`${b}.ffn_up.weight`, n.up, [F, C], null, w(C));
    add(`${b}.ffn_down.weight`, n.down, [C, F], null, w(F));
  }
  norm('output_norm.weight', 'model.norm.weight', C);
  if (!cfg.tieWordEmbeddings) add('output.weight', 'lm_head.weight', [V, C], null, w(C) * 4);
  if (arch === 'llama') {
    ggufTensors.push({
      name: 'rope_freqs.weight',
      ne: [HS / 2],
      type: 'F32',
      data: new Uint8Array(Float32Array.from(LLAMA3_FREQ_FACTORS).buffer),
    });
    cfg.ropeScaling = { type: 'freq_factors', factors: LLAMA3_FREQ_FACTORS };
  }

  const tokens = [...BYTE_TO_CHAR, ...EXTRA_TOKENS];
  if (tokens.length !== V) throw new Error(`fixture vocabulary has ${tokens.length} tokens, config says ${V}`);
  const types = tokens.map((t) => (t.startsWith('<|') ? 3 : 1)); // 3: control, 1: normal
  const a = arch;
  const gguf = writeGguf({
    metadata: [
      ['general.architecture', gv.str(a)],
      ['general.name', gv.str('hearth-gguf-test')],
      [`${a}.block_count`, gv.u32(cfg.numLayers)],
      [`${a}.context_length`, gv.u32(cfg.maxPositionEmbeddings)],
      [`${a}.embedding_length`, gv.u32(C)],
      [`${a}.feed_forward_length`, gv.u32(F)],
      [`${a}.attention.head_count`, gv.u32(NH)],
      [`${a}.attention.head_count_kv`, gv.u32(NKV)],
      [`${a}.attention.key_length`, gv.u32(HS)],
      [`${a}.attention.value_length`, gv.u32(HS)],
      [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(cfg.rmsNormEps)],
      [`${a}.rope.freq_base`, gv.f32(cfg.ropeTheta)],
      [`${a}.rope.dimension_count`, gv.u32(HS)],
      ['tokenizer.ggml.model', gv.str('gpt2')],
      ['tokenizer.ggml.pre', gv.str(arch === 'llama' ? 'llama-bpe' : 'qwen2')],
      ['tokenizer.ggml.tokens', gv.strs(tokens)],
      ['tokenizer.ggml.token_type', gv.i32s(types)],
      ['tokenizer.ggml.merges', gv.strs(MERGES)],
      ['tokenizer.ggml.eos_token_id', gv.u32(V - 1)],
      ['tokenizer.ggml.padding_token_id', gv.u32(V - 1)],
      ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ],
    tensors: ggufTensors,
  });
  return { config: cfg, gguf, tensors: hf };
}
