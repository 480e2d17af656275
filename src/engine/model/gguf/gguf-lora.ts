/**
 * A PEFT LoRA adapter as a GGUF LoRA adapter file, the kind llama.cpp loads with `--lora` (and LM
 * Studio and Ollama through it), laid out as llama.cpp's convert_lora_to_gguf.py writes one:
 *
 * - metadata `general.type = "adapter"`, `adapter.type = "lora"`, `adapter.lora.alpha` and the base
 *   model's `general.architecture` (llama.cpp refuses a file whose architecture is not the model's);
 * - per adapted module two F32 tensors named after the base weight: `blk.N.attn_q.weight.lora_a`
 *   with ne [in, r] and `.lora_b` with ne [r, out], which are PEFT's A [r, in] and B [out, r] bytes
 *   unchanged (src/llama-adapter.cpp checks a.ne[0] = w.ne[0], b.ne[1] = w.ne[1], a.ne[1] = b.ne[0]);
 * - llama.cpp scales by alpha / r with r = lora_b.ne[0], and by 1 when alpha is 0 (llama-graph.cpp
 *   build_lora_mm). So the alpha written is Hearth's scale times r (rsLoRA's alpha / sqrt(r) too);
 *   a zero scale is written as a zero B, whose update is zero whatever llama.cpp scales it by;
 * - llama-family files (llama, smollm3) have their q/k rows permuted by the converter for llama.cpp's
 *   interleaved RoPE (gguf-model.ts), so B's q_proj/k_proj rows are permuted the same way to line
 *   up with the base weights. Qwen2/Qwen3, Phi-3 and Gemma 3 are not permuted (NEOX RoPE).
 * - Phi-3's fused modules map to its fused GGUF weights: qkv_proj -> attn_qkv, gate_up_proj ->
 *   ffn_up (gate rows first in both, so B's rows need no reordering).
 *
 * Not here: reading GGUF adapters (Hearth serves PEFT adapters), HTTP (service/training).
 * Reference: ggml-org/llama.cpp convert_lora_to_gguf.py, src/llama-adapter.cpp.
 */
import type { Architecture, ModelConfig } from '../config/model-config';
import { tensorToF32 } from '../../tensor/tensor-data';
import type { TensorData } from '../../tensor/tensor-data';
import { groupLoraTensors } from '../lora/adapter-tensors';
import { loraScale } from '../lora/lora-config';
import { type LoraModule } from '../lora/peft-modules';
import { LAYER_NAMES, permuteRows } from './gguf-model';
import { gv, writeGguf, type GgufTensorInput } from './gguf-writer';

/** Refused: an architecture or module llama.cpp has no LoRA target for. The message names it. */
export class GgufLoraError extends Error {
  override name = 'GgufLoraError';
}

/** Hearth architecture -> llama.cpp's `general.architecture`, and whether its q/k rows are permuted. */
const ARCHITECTURES: Partial<Record<Architecture, { gguf: string; permuted: boolean }>> = {
  llama: { gguf: 'llama', permuted: true },
  smollm3: { gguf: 'smollm3', permuted: true },
  qwen2: { gguf: 'qwen2', permuted: false },
  qwen3: { gguf: 'qwen3', permuted: false },
  phi3: { gguf: 'phi3', permuted: false },
  gemma3: { gguf: 'gemma3', permuted: false },
};

/** The architectures whose adapters export, for messages. */
const GGUF_LORA_ARCHITECTURES = Object.keys(ARCHITECTURES) as Architecture[];

/** PEFT module -> the GGUF layer weight it adapts (gguf-model.ts's names, plus Phi-3's fused weights). */
function ggufModule(module: LoraModule): string {
  if (module === 'qkv_proj') return 'attn_qkv';
  if (module === 'gate_up_proj') return 'ffn_up';
  const found = Object.entries(LAYER_NAMES).find(([, hf]) => hf.endsWith(`.${module}`));
  if (!found) throw new GgufLoraError(`module ${module} has no GGUF weight`);
  return found[0];
}

interface GgufLoraOptions {
  rank: number;
  alpha: number;
  useRslora?: boolean;
  /** `general.name`. */
  name?: string;
}

/**
 * The GGUF LoRA file of a PEFT adapter's tensors for a base model of config `cfg`. Throws
 * GgufLoraError for an architecture llama.cpp's adapters do not cover here, and the shape errors
 * of groupLoraTensors for tensors that do not fit the model.
 */
export function ggufLoraAdapter(cfg: ModelConfig, opts: GgufLoraOptions, tensors: Iterable<TensorData>): Uint8Array {
  const arch = ARCHITECTURES[cfg.arch];
  if (!arch) {
    throw new GgufLoraError(`a ${cfg.arch} adapter cannot be exported as GGUF (exportable: ${GGUF_LORA_ARCHITECTURES.join(', ')})`);
  }
  const r = opts.rank;
  const scale = loraScale(opts.alpha, r, opts.useRslora ?? false);
  const out: GgufTensorInput[] = [];
  const groups = [...groupLoraTensors(cfg, r, tensors)].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
  for (const [id, { A, B }] of groups) {
    const [layer, module] = id.split('.') as [string, LoraModule];
    const weight = `blk.${layer}.${ggufModule(module)}.weight`;
    const a = tensorToF32(A);
    const b = scale === 0 ? new Float32Array(B.shape[0] * r) : tensorToF32(B);
    let bBytes = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    // B's rows are q/k output rows: permuted like the base weights they add to.
    if (arch.permuted && (module === 'q_proj' || module === 'k_proj')) {
      bBytes = permuteRows(bBytes, module === 'q_proj' ? cfg.numHeads : cfg.numKvHeads, cfg.headDim);
    }
    out.push({ name: `${weight}.lora_a`, ne: [A.shape[1], r], type: 'F32', data: new Uint8Array(a.buffer, a.byteOffset, a.byteLength) });
    out.push({ name: `${weight}.lora_b`, ne: [r, B.shape[0]], type: 'F32', data: bBytes });
  }
  return writeGguf({
    metadata: [
      ['general.architecture', gv.str(arch.gguf)],
      ['general.type', gv.str('adapter')],
      ['general.name', gv.str(opts.name ?? 'hearth-lora')],
      ['adapter.type', gv.str('lora')],
      // llama.cpp's scale is alpha / r: this alpha makes it Hearth's scale (0 stays 0; B is zero then).
      ['adapter.lora.alpha', gv.f32(scale * r)],
    ],
    tensors: out,
  });
}
