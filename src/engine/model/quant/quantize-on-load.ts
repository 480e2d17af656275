/**
 * Quantize on load: a safetensors model (f32, f16 or bf16) read as Q8_0 or Q4_K blocks, so it
 * serves and trains (QLoRA) exactly as a GGUF file of those types does: WeightSet keeps the blocks
 * on the GPU and the kernels dequantize them (issue 11, "Quantize on load").
 *
 * Which tensors (`quantizedDtype`), after llama.cpp's defaults (src/llama-quant.cpp):
 * - Q8_0: every matrix, the embedding and lm_head included, as llama-quantize's Q8_0 does.
 * - Q4_K: the projections (q, k, v, o, gate, up, down) and an untied embedding. lm_head, and so a
 *   tied embedding, stays in the file's precision: llama.cpp gives the output matrix more bits
 *   (Q6_K in its Q4_K files) because its error lands directly on the logits, and Hearth has no
 *   Q6_K quantizer.
 * - 1-D tensors (norms, biases) stay as they are (WeightSet keeps them in f32 anyway).
 * - A matrix whose rows are not whole blocks stays unquantized, except that Q4_K's rows that are
 *   not a multiple of 256 but are of 32 fall back to Q8_0, as llama.cpp falls back to a 32-wide
 *   type for them (Qwen2.5-0.5B's hidden size 896 is 3.5 blocks of 256). Matrices fused on the GPU
 *   (q/k/v, gate/up) share their row length, so their parts always get the same type.
 *
 * Not here: the block formats (quantize.ts), making them on the GPU as the engine uploads
 * (quantize-upload.ts, weights/weight-set.ts).
 */
import type { ModelConfig } from '../config/model-config';
import { ggmlBytes, ggmlType } from '../../tensor/ggml-types';
import { quantize, quantizeBlockSize } from './quantize';
import { type QuantizeTarget } from '../../tensor/dtype';
import type { LoadedModelFiles, WeightEntry } from '../files/repo';
import { dequantizeTensor } from './dequant';
import { ggmlName, isBlockDType } from '../../tensor/dtype';
import { numel, type TensorData } from '../../tensor/tensor-data';
import { EMBED_NAME, LM_HEAD_NAME } from '../weights/parameter-plan';

/** The dtype a tensor of `shape` is loaded in under `target`, or null to keep its own. */
export function quantizedDtype(cfg: ModelConfig, name: string, shape: readonly number[], target: QuantizeTarget): QuantizeTarget | null {
  if (shape.length !== 2) return null;
  const output = name === LM_HEAD_NAME || (name === EMBED_NAME && cfg.tieWordEmbeddings);
  if (target === 'q4_k' && output) return null;
  const cols = shape[1];
  if (cols % quantizeBlockSize(target) === 0) return target;
  return target === 'q4_k' && cols % quantizeBlockSize('q8_0') === 0 ? 'q8_0' : null;
}

/** Values quantized between two yields to the worker's other tasks (a multiple of every block size). */
const SLICE = 1 << 18;

/**
 * A float tensor as `dtype` blocks (its rows are whole blocks: quantizedDtype checked), made in
 * slices that let the engine's other tasks (chat steps, HTTP) run between them: a 150k-row
 * embedding takes seconds to quantize, which must not stall the one engine thread.
 */
export async function quantizeTensor(t: TensorData, dtype: QuantizeTarget): Promise<TensorData> {
  if (isBlockDType(t.dtype)) throw new Error(`quantizeTensor: ${t.name} is ${t.dtype} already`);
  const x = dequantizeTensor(t);
  const { typeSize, blockSize } = ggmlType(ggmlName(dtype));
  const data = new Uint8Array(blockBytes(dtype, t.shape));
  for (let at = 0; at < x.length; at += SLICE) {
    data.set(quantize(dtype, x.subarray(at, at + SLICE)), (at / blockSize) * typeSize);
    if (at + SLICE < x.length) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return { name: t.name, dtype, shape: t.shape, data };
}

function blockBytes(dtype: QuantizeTarget, shape: readonly number[]): number {
  return ggmlBytes(ggmlType(ggmlName(dtype)), numel([...shape]));
}

/**
 * `files` with its matrices quantized to `target`: `quantizeOnLoad` says which tensors become which
 * blocks, for the engine to make them on the GPU as it uploads (quantize-upload.ts), and `tensors()`
 * makes them on the CPU as it streams them (one tensor in f32 at a time: the kernels' reference, and
 * the path without a GPU). `weights` and `weightBytes` say the quantized dtypes and bytes,
 * `fileWeightBytes` what the files hold. A GGUF model is refused: its blocks are what it is.
 */
export function quantizeOnLoad(files: LoadedModelFiles, target: QuantizeTarget): LoadedModelFiles {
  if (files.weights.some((w) => isBlockDType(w.dtype))) {
    throw new Error(`${files.sourceLabel}: its weights are quantized already; only f32, f16 and bf16 weights are quantized on load`);
  }
  const cfg = files.config;
  const dtypes = new Map(files.weights.map((w) => [w.name, quantizedDtype(cfg, w.name, w.shape, target)]));
  const weights: WeightEntry[] = files.weights.map((w) => {
    const dtype = dtypes.get(w.name);
    return dtype ? { ...w, dtype, bytes: blockBytes(dtype, w.shape) } : w;
  });
  return {
    ...files,
    weights,
    weightBytes: weights.reduce((s, w) => s + w.bytes, 0),
    fileWeightBytes: files.fileWeightBytes ?? files.weightBytes,
    quantizeOnLoad: {
      dtypes: new Map([...dtypes].filter((e): e is [string, QuantizeTarget] => e[1] !== null)),
      fileTensors: () => files.tensors(),
    },
    async *tensors() {
      for await (const t of files.tensors()) {
        const dtype = dtypes.get(t.name);
        yield dtype ? await quantizeTensor(t, dtype) : t;
      }
    },
  };
}
