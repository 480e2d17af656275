/**
 * About how many bytes a recommended model downloads and needs on the GPU, computed from its
 * shape (config.json values) and the bytes per block of each tensor's type, never stored as
 * numbers: safetensors files are BF16 throughout; a GGUF file's types follow llama.cpp's choice
 * per tensor for its file type (src/llama-quant.cpp `llama_tensor_get_type`): Q8_0 everywhere for
 * Q8_0; for Q4_K_M, Q4_K with Q6_K for the output (the embedding when tied) and for attn_v and
 * ffn_down in the layers `use_more_bits` picks, and a K-quant falls back to Q5_0 / Q8_0 where a
 * row is not whole 256-element super-blocks (Qwen2.5-0.5B's 896). Norms and biases are F32.
 * Weights stay in these types on the GPU (docs/design.md), so the GPU needs their bytes plus the KV
 * cache the engine reserves per model.
 *
 * Not here: the list itself (recommended-models.json), the view (recommended-models.ts).
 */

export interface ModelShape {
  arch: 'llama' | 'qwen2' | 'qwen3' | 'gemma3';
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  vocab: number;
  tied: boolean;
  qkvBias?: boolean;
  qkNorm?: boolean;
  /** Gemma 3: two more norms per layer, on the attention and MLP outputs. */
  sandwichNorms?: boolean;
}

/** Bytes per block and elements per block (ggml-common.h). */
const BLOCKS: Record<string, [bytes: number, elements: number]> = {
  F32: [4, 1],
  F16: [2, 1],
  BF16: [2, 1],
  Q8_0: [34, 32],
  Q5_0: [22, 32],
  Q4_K: [144, 256],
  Q6_K: [210, 256],
};
/** A K-quant's replacement when rows are not whole super-blocks (llama-quant.cpp's fallback). */
const FALLBACK: Record<string, string> = { Q4_K: 'Q5_0', Q6_K: 'Q8_0' };

/** The file types the list uses: safetensors' BF16, and GGUF's Q8_0 and Q4_K_M. */
export type FileType = 'BF16' | 'F16' | 'Q8_0' | 'Q4_K_M';

interface Matrix {
  role: 'embed' | 'output' | 'attn_v' | 'ffn_down' | 'other';
  layer: number;
  /** Row length (ggml's ne[0], the input size) and rows. */
  cols: number;
  rows: number;
}

function matrices(s: ModelShape): Matrix[] {
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  const out: Matrix[] = [{ role: 'embed', layer: -1, cols: s.hidden, rows: s.vocab }];
  for (let l = 0; l < s.layers; l++) {
    out.push(
      { role: 'other', layer: l, cols: s.hidden, rows: q },
      { role: 'other', layer: l, cols: s.hidden, rows: kv },
      { role: 'attn_v', layer: l, cols: s.hidden, rows: kv },
      { role: 'other', layer: l, cols: q, rows: s.hidden },
      { role: 'other', layer: l, cols: s.hidden, rows: s.intermediate },
      { role: 'other', layer: l, cols: s.hidden, rows: s.intermediate },
      { role: 'ffn_down', layer: l, cols: s.intermediate, rows: s.hidden },
    );
  }
  if (!s.tied) out.push({ role: 'output', layer: -1, cols: s.hidden, rows: s.vocab });
  return out;
}

/** F32 vectors: norms (Gemma's sandwich norms, Qwen3's and Gemma's q/k norms), biases. */
function vectorElements(s: ModelShape): number {
  const norms = (s.sandwichNorms ? 4 : 2) * s.hidden + (s.qkNorm ? 2 * s.headDim : 0);
  const perLayer = norms + (s.qkvBias ? (s.heads + 2 * s.kvHeads) * s.headDim : 0);
  return s.layers * perLayer + s.hidden;
}

/** llama-quant.cpp `use_more_bits`: the first and last eighth of the layers and every third between. */
function useMoreBits(layer: number, layers: number): boolean {
  const eighth = Math.floor(layers / 8);
  return layer < eighth || layer >= Math.floor((7 * layers) / 8) || (layer - eighth) % 3 === 2;
}

function typeOf(m: Matrix, s: ModelShape, fileType: FileType): string {
  let type: string;
  if (fileType !== 'Q4_K_M') type = fileType;
  else if (m.role === 'output' || (m.role === 'embed' && s.tied)) type = 'Q6_K';
  else if ((m.role === 'attn_v' || m.role === 'ffn_down') && useMoreBits(m.layer, s.layers)) type = 'Q6_K';
  else type = 'Q4_K';
  return m.cols % 256 === 0 ? type : (FALLBACK[type] ?? type);
}

export function parameterCount(s: ModelShape): number {
  return matrices(s).reduce((n, m) => n + m.cols * m.rows, 0) + vectorElements(s);
}

/** Bytes of the weights stored as `fileType` (the download, less a few MiB of tokenizer and metadata). */
export function weightBytes(s: ModelShape, fileType: FileType): number {
  let bytes = vectorElements(s) * 4;
  for (const m of matrices(s)) {
    const [blockBytes, elements] = BLOCKS[typeOf(m, s, fileType)];
    bytes += ((m.cols * m.rows) / elements) * blockBytes;
  }
  return bytes;
}

/** The largest single tensor's bytes: the token embedding (or lm_head), which may exceed one binding. */
export function largestTensorBytes(s: ModelShape, fileType: FileType): number {
  const embed = matrices(s)[0];
  const [blockBytes, elements] = BLOCKS[typeOf(embed, s, fileType)];
  return ((embed.cols * embed.rows) / elements) * blockBytes;
}

/** The engine's KV cache reservation per model (engine.ts: 256 MiB, 64 MiB on a software adapter). */
export function kvCacheBytes(softwareAdapter: boolean): number {
  return (softwareAdapter ? 64 : 256) * 2 ** 20;
}
