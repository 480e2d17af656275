/**
 * The GGUF the CPU backend hands llama.cpp: the model's tensors with a vocabulary of placeholders.
 *
 * Hearth keeps its own tokenizer, chat templates, detokenizer, stop strings and output parsers on
 * both backends, so llama.cpp only computes logits and samples; it sees token ids, never text. But
 * wllama 3.8's completion request takes the prompt as text (a token-id array is refused), and
 * llama.cpp's server holds back a token whose text ends inside a UTF-8 character (such a token's
 * id is then never reported while streaming). So the vocabulary written for llama.cpp spells token
 * i as the single code point U+10000 + i: a prompt of ids is a string of those code points, and
 * each sampled token streams as one complete character whose code point is its id. Every token is
 * USER_DEFINED in a BPE vocabulary without merges: llama.cpp matches user-defined tokens in the
 * text before any BPE (UTF-8 is self-synchronising, so a 4-byte character matches only itself),
 * copies their text as their piece, adds no BOS, and drops text it cannot match instead of failing
 * (a SentencePiece vocabulary without byte tokens aborts on such text). `tokenizer.ggml.*` keys of
 * the source are dropped (its chat template too: Hearth renders prompts); its EOS/BOS ids stay.
 *
 * - `cpuGgufFromGguf`: a GGUF file (or the first part of a split one) with its metadata rewritten
 *   and its tensor bytes reused as they are (a Blob slice, no copy).
 * - `cpuGgufFromSafetensors`: a safetensors model written as GGUF as llama.cpp's
 *   convert_hf_to_gguf.py does for llama (Mistral, SmolLM2, Llama 3.x), qwen2 and qwen3: llama.cpp's
 *   tensor names, llama's q/k rows permuted for its interleaved RoPE, Llama 3's frequency scaling as
 *   `rope_freqs.weight`, norms and biases as F32, matrices in their own precision (F16/F32, or
 *   Q8_0/Q4_K blocks when quantized on load), bf16 ones as f16 (`bf16AsF16`).
 *
 * Not here: caching the result (cpu-models.ts), running it (cpu-engine.ts).
 */
import type { ModelConfig } from '../model/config/model-config';
import { bf16BitsToF32, f32ToF16Bits } from '../tensor/dtype';
import { tensorToF32 } from '../tensor/tensor-data';
import type { LoadedModelFiles } from '../model/files/repo';
import { ggmlBytes, ggmlType } from '../tensor/ggml-types';
import { PERMUTED_QK } from '../model/gguf/gguf-families';
import { llama3RopeFactors, ggufHyperparameters } from '../model/gguf/gguf-hparams';
import { ggufTensorName, permuteRows } from '../model/gguf/gguf-model';
import type { GgufFile, GgufMetadataEntry } from '../model/gguf/gguf-reader';
import { ggufLayout, gv, writeGgufHeader, type GgufTensorInput } from '../model/gguf/gguf-writer';

/** Token i is spelled by the code point FIRST_CODE_POINT + i (4-byte UTF-8, never a space or control). */
const FIRST_CODE_POINT = 0x10000;
/** The largest vocabulary the placeholder code points can spell (up to U+10FFFF). */
export const MAX_CPU_VOCAB = 0x10ffff - FIRST_CODE_POINT + 1;

/** The prompt text that llama.cpp tokenizes into exactly `ids` under the placeholder vocabulary. */
export function placeholderText(ids: readonly number[]): string {
  let out = '';
  for (const id of ids) out += String.fromCodePoint(FIRST_CODE_POINT + id);
  return out;
}

/** The token ids spelled by a streamed piece of placeholder text. */
export function placeholderIds(text: string): number[] {
  const ids: number[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < FIRST_CODE_POINT) throw new Error(`llama.cpp streamed ${JSON.stringify(ch)}, which is not a placeholder token`);
    ids.push(cp - FIRST_CODE_POINT);
  }
  return ids;
}

type Metadata = Array<[string, GgufMetadataEntry]>;

/** The ids llama.cpp must know: EOS (it stops there) and BOS (its SentencePiece default would be id 1). */
export interface SpecialIds {
  eos: number | null;
  bos: number | null;
}

/** The placeholder vocabulary's `tokenizer.ggml.*` keys. */
export function placeholderTokenizer(vocabSize: number, ids: SpecialIds): Metadata {
  if (vocabSize > MAX_CPU_VOCAB)
    throw new Error(`a vocabulary of ${vocabSize} tokens is larger than the CPU backend spells (${MAX_CPU_VOCAB})`);
  const tokens = Array.from({ length: vocabSize }, (_, i) => String.fromCodePoint(FIRST_CODE_POINT + i));
  // llama.cpp stops at its EOS: the model's own, else the last id (Hearth ends there by itself too).
  const eos = ids.eos ?? vocabSize - 1;
  return [
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str('gpt-2')],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    // llama_token_type 4: USER_DEFINED.
    ['tokenizer.ggml.token_type', gv.i32s(new Int32Array(vocabSize).fill(4))],
    ['tokenizer.ggml.merges', gv.strs([])],
    ['tokenizer.ggml.eos_token_id', gv.u32(eos)],
    ['tokenizer.ggml.bos_token_id', gv.u32(ids.bos ?? eos)],
    ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ['tokenizer.ggml.add_eos_token', gv.bool(false)],
  ];
}

/**
 * A GGUF file's first (or only) part with the placeholder vocabulary: the header is written anew
 * (the same tensors at the same offsets in the data section) and the data section is `blob`'s own.
 */
export function cpuGgufFromGguf(blob: Blob, file: GgufFile, vocabSize: number, ids: SpecialIds): Blob {
  return withTokenizer(blob, file, placeholderTokenizer(vocabSize, ids));
}

/** `blob` (a GGUF read as `file`) with its `tokenizer.*` keys replaced by `tokenizer`; tensor bytes as they are. */
export function withTokenizer(blob: Blob, file: GgufFile, tokenizer: Metadata): Blob {
  const metadata: Metadata = [...file.metadata].filter(([k]) => !k.startsWith('tokenizer.'));
  metadata.push(...tokenizer);
  const tensors = file.tensors.map((t) => ({ name: t.name, ne: t.ne, type: t.type.name, offset: t.begin - file.dataOffset }));
  const header = writeGgufHeader({ metadata, tensors });
  return new Blob([header as Uint8Array<ArrayBuffer>, blob.slice(file.dataOffset)]);
}

/** llama.cpp's name of an HF tensor. */
function llamaCppTensorName(hf: string): string {
  const name = ggufTensorName(hf);
  if (!name) throw new Error(`the CPU backend has no GGUF name for the tensor ${hf}`);
  return name;
}

/** The architecture llama.cpp runs a config as, or why the CPU backend cannot convert it. */
function llamaCppArchitecture(c: ModelConfig): 'llama' | 'qwen2' | 'qwen3' {
  const refuse = (why: string) =>
    new Error(`The CPU backend cannot convert this safetensors model to GGUF: ${why}. Download its GGUF instead.`);
  if (c.arch !== 'llama' && c.arch !== 'qwen2' && c.arch !== 'qwen3') throw refuse(`the ${c.arch} family is not converted`);
  if (c.slidingWindow !== null && c.slidingWindow < c.maxPositionEmbeddings) throw refuse('sliding-window attention is not converted');
  if (c.ropeScaling && c.ropeScaling.type !== 'llama3' && c.ropeScaling.type !== 'linear' && c.ropeScaling.type !== 'freq_factors') {
    throw refuse(`${c.ropeScaling.type} RoPE scaling is not converted`);
  }
  if (c.outputBias || c.mlpBias) throw refuse('o_proj or MLP biases are not converted');
  return c.arch;
}

function configMetadata(c: ModelConfig, a: string, ids: SpecialIds): Metadata {
  return [...ggufHyperparameters(c, a), ...placeholderTokenizer(c.vocabSize, ids)];
}

/** One HF tensor as llama.cpp's converter writes it. */
function convertTensor(t: { name: string; dtype: string; shape: number[]; data: Uint8Array }, c: ModelConfig): GgufTensorInput {
  const name = llamaCppTensorName(t.name);
  const ne = [...t.shape].reverse();
  // Norms and biases are F32 in llama.cpp's files (its CPU kernels add and scale them in f32).
  if (t.shape.length === 1) return { name, ne, type: 'F32', data: new Uint8Array(tensorToF32(t as never).buffer) };
  let data = t.data;
  if (PERMUTED_QK.includes(c.arch)) {
    const rowBytes = data.length / t.shape[0];
    if (t.name.endsWith('self_attn.q_proj.weight')) data = permuteRows(data, c.numHeads, c.headDim, rowBytes);
    if (t.name.endsWith('self_attn.k_proj.weight')) data = permuteRows(data, c.numKvHeads, c.headDim, rowBytes);
  }
  if (t.dtype === 'bf16') return { name, ne, type: 'F16', data: bf16AsF16(data) };
  return { name, ne, type: t.dtype.toUpperCase(), data };
}

/**
 * bf16 values as f16, as convert_hf_to_gguf.py's f16 output writes them: exact for every value in
 * f16's normal range (f16 keeps 10 mantissa bits to bf16's 7), smaller ones rounded to f16's
 * subnormals, larger ones clamped to ±65504. llama.cpp's WebAssembly build multiplies f16 with
 * SIMD and bf16 without: f16 weights decode 1.6x faster there (docs/performance.md).
 */
export function bf16AsF16(bytes: Uint8Array): Uint8Array {
  const aligned = bytes.byteOffset % 2 ? bytes.slice() : bytes;
  const src = new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16Bits(Math.max(-65504, Math.min(65504, bf16BitsToF32(src[i]))));
  return new Uint8Array(out.buffer);
}

/** A safetensors model (its weights streamed from `files`) as one GGUF Blob with the placeholder vocabulary. */
export async function cpuGgufFromSafetensors(files: LoadedModelFiles, ids: SpecialIds): Promise<Blob> {
  const c = files.config;
  const a = llamaCppArchitecture(c);
  const tensors: GgufTensorInput[] = [];
  const factors = llama3RopeFactors(c);
  if (factors) tensors.push({ name: 'rope_freqs.weight', ne: [factors.length], type: 'F32', data: new Uint8Array(factors.buffer) });
  for await (const t of files.tensors()) tensors.push(convertTensor(t, c));
  const metadata = configMetadata(c, a, ids);
  const sizes = tensors.map((t) =>
    ggmlBytes(
      ggmlType(t.type),
      t.ne.reduce((x, y) => x * y, 1),
    ),
  );
  const header = writeGgufHeader({ metadata, tensors: ggufLayout(tensors, 32, sizes) });
  const parts: BlobPart[] = [header as Uint8Array<ArrayBuffer>];
  for (const t of tensors) {
    parts.push(t.data as Uint8Array<ArrayBuffer>);
    const pad = (32 - (t.data.length % 32)) % 32;
    if (pad) parts.push(new Uint8Array(pad));
  }
  return new Blob(parts);
}
