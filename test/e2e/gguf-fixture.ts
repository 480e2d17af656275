// The bundled model (public/models/tiny-chat: Llama, bf16, byte-level BPE with digits split one by
// one) converted to GGUF as llama.cpp's convert_hf_to_gguf.py writes it with `--outtype bf16`:
// BF16 matrices (the very bytes of the original) and F32 norms (bf16 widens exactly), so it
// computes what the original does; q/k rows permuted for llama.cpp's RoPE, the
// config as `llama.*` keys and the tokenizer as `tokenizer.ggml.*` (gpt2 model, "smollm"
// pre-tokenizer: Digits(individual) then the GPT-2 regex, as this tokenizer.json does). `splitGguf`
// cuts a file into gguf-split parts (examples/gguf-split: `split.no` from 0, `split.count`,
// `split.tensors.count`; the first part keeps every other key). With `Q8_0`, the matrices are
// quantized as llama-quantize does (Hearth's quantizer, model/quant/quantize.ts, is ggml's quantize_row_q8_0_ref) and the norms stay F32.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tensorToF32 } from '../../src/engine/tensor/tensor-data';
import { quantizeQ8_0 } from '../../src/engine/model/quant/quantize';
import { permuteRows } from '../../src/engine/model/gguf/gguf-model';
import type { GgufMetadataEntry } from '../../src/engine/model/gguf/gguf-reader';
import { GgufValueType } from '../../src/engine/model/gguf/gguf-reader';
import { gv, writeGguf, type GgufTensorInput } from '../../src/engine/model/gguf/gguf-writer';
import { SafetensorsFile } from '../../src/engine/model/files/safetensors';

const DIR = fileURLToPath(new URL('../../public/models/tiny-chat/', import.meta.url));
type Json = Record<string, any>;
type Metadata = Array<[string, GgufMetadataEntry]>;

/** HF layer suffix -> GGUF (llama.cpp's LLM_TENSOR_NAMES for llama). */
const LAYER: Record<string, string> = {
  input_layernorm: 'attn_norm',
  'self_attn.q_proj': 'attn_q',
  'self_attn.k_proj': 'attn_k',
  'self_attn.v_proj': 'attn_v',
  'self_attn.o_proj': 'attn_output',
  post_attention_layernorm: 'ffn_norm',
  'mlp.gate_proj': 'ffn_gate',
  'mlp.up_proj': 'ffn_up',
  'mlp.down_proj': 'ffn_down',
};

function ggufName(hf: string): string {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  const m = /^model\.layers\.(\d+)\.(.+)\.weight$/.exec(hf);
  if (!m || !LAYER[m[2]]) throw new Error(`no GGUF name for ${hf}`);
  return `blk.${m[1]}.${LAYER[m[2]]}.weight`;
}

/** Token types (llama.cpp `llama_token_type`): 1 normal, 3 control, 4 user-defined. */
function tokenizerMetadata(tj: Json, tc: Json): Metadata {
  const tokens: string[] = [];
  const types: number[] = [];
  for (const [token, id] of Object.entries(tj.model.vocab as Record<string, number>)) {
    tokens[id] = token;
    types[id] = 1;
  }
  for (const t of tj.added_tokens as Json[]) {
    tokens[t.id] = t.content;
    types[t.id] = t.special ? 3 : 4;
  }
  const merges = (tj.model.merges as (string | string[])[]).map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const eos = (tj.added_tokens as Json[]).find((t) => t.content === tc.eos_token)!.id as number;
  const pad = (tj.added_tokens as Json[]).find((t) => t.content === tc.pad_token)!.id as number;
  return [
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str('smollm')],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    ['tokenizer.ggml.token_type', gv.i32s(types)],
    ['tokenizer.ggml.merges', gv.strs(merges)],
    ['tokenizer.ggml.eos_token_id', gv.u32(eos)],
    ['tokenizer.ggml.padding_token_id', gv.u32(pad)],
    ['tokenizer.ggml.add_bos_token', gv.bool(false)],
    ['tokenizer.chat_template', gv.str(tc.chat_template)],
  ];
}

/** The bundled model's tokenizer and chat template as `tokenizer.ggml.*` keys (benchmarks borrow them for random-weight models). */
export function tinyChatTokenizerMetadata(): Metadata {
  return tokenizerMetadata(
    JSON.parse(readFileSync(DIR + 'tokenizer.json', 'utf8')),
    JSON.parse(readFileSync(DIR + 'tokenizer_config.json', 'utf8')),
  );
}

/** The bundled model as one BF16 (or Q8_0) GGUF file, with `architecture` written as its general.architecture. */
export async function tinyChatGguf(
  architecture = 'llama',
  type: 'BF16' | 'Q8_0' = 'BF16',
): Promise<{ metadata: Metadata; tensors: GgufTensorInput[] }> {
  const config = JSON.parse(readFileSync(DIR + 'config.json', 'utf8')) as Json;
  const weights = await SafetensorsFile.open(new Uint8Array(readFileSync(DIR + 'model.safetensors')));
  const tensors: GgufTensorInput[] = [];
  for (const name of weights.names) {
    const t = await weights.read(name);
    if (t.dtype !== 'bf16') throw new Error(`${name} is ${t.dtype}, not bf16`);
    const ne = [...t.shape].reverse();
    if (t.shape.length === 1) {
      tensors.push({ name: ggufName(name), ne, type: 'F32', data: new Uint8Array(tensorToF32(t).buffer) });
      continue;
    }
    let data = type === 'Q8_0' ? quantizeQ8_0(tensorToF32(t)) : t.data;
    const rowBytes = data.length / t.shape[0];
    if (name.endsWith('q_proj.weight')) data = permuteRows(data, config.num_attention_heads, config.head_dim, rowBytes);
    if (name.endsWith('k_proj.weight')) data = permuteRows(data, config.num_key_value_heads, config.head_dim, rowBytes);
    tensors.push({ name: ggufName(name), ne, type, data });
  }
  // llama.cpp's order: the embedding first, then the layers, then the output norm.
  const rank = (n: string) => (n === 'token_embd.weight' ? -1 : n === 'output_norm.weight' ? 1e9 : Number(/^blk\.(\d+)/.exec(n)![1]));
  tensors.sort((a, b) => rank(a.name) - rank(b.name));
  const a = architecture;
  const metadata: Metadata = [
    ['general.architecture', gv.str(a)],
    ['general.name', gv.str('tiny-chat')],
    // llama_ftype: 32 MOSTLY_BF16, 7 MOSTLY_Q8_0.
    ['general.file_type', gv.u32(type === 'Q8_0' ? 7 : 32)],
    [`${a}.block_count`, gv.u32(config.num_hidden_layers)],
    [`${a}.context_length`, gv.u32(config.max_position_embeddings)],
    [`${a}.embedding_length`, gv.u32(config.hidden_size)],
    [`${a}.feed_forward_length`, gv.u32(config.intermediate_size)],
    [`${a}.attention.head_count`, gv.u32(config.num_attention_heads)],
    [`${a}.attention.head_count_kv`, gv.u32(config.num_key_value_heads)],
    [`${a}.attention.key_length`, gv.u32(config.head_dim)],
    [`${a}.attention.value_length`, gv.u32(config.head_dim)],
    [`${a}.rope.dimension_count`, gv.u32(config.head_dim)],
    [`${a}.rope.freq_base`, gv.f32(config.rope_theta)],
    [`${a}.attention.layer_norm_rms_epsilon`, gv.f32(config.rms_norm_eps)],
    [`${a}.vocab_size`, gv.u32(config.vocab_size)],
    ...tinyChatTokenizerMetadata(),
  ];
  return { metadata, tensors };
}

const u16 = (value: number): GgufMetadataEntry => ({ type: GgufValueType.UINT16, value });

/** gguf-split's parts: `cuts` are the tensor indices where parts 2, 3... begin. */
export function splitGguf(model: { metadata: Metadata; tensors: GgufTensorInput[] }, cuts: number[]): Uint8Array[] {
  const bounds = [0, ...cuts, model.tensors.length];
  const count = bounds.length - 1;
  return Array.from({ length: count }, (_, i) => {
    const split: Metadata = [
      ['split.no', u16(i)],
      ['split.count', u16(count)],
      ['split.tensors.count', gv.i32(model.tensors.length)],
    ];
    return writeGguf({
      metadata: i === 0 ? [...model.metadata, ...split] : split,
      tensors: model.tensors.slice(bounds[i], bounds[i + 1]),
    });
  });
}
