/**
 * A GGUF file as the reference model's input: its config, and every weight dequantized to f32 in the
 * HF layout (names, shapes, llama's q/k rows un-permuted; Llama 3's rope_freqs and Phi-3's LongRoPE
 * factors as the config's scaling). Slow and memory-hungry on purpose (f32 everywhere): the oracle for the
 * quantized GPU path and for comparisons with llama.cpp, not a loader for serving.
 *
 * Not here: parsing and validation (model/gguf/gguf-reader.ts), the name and config mapping
 * (model/gguf/gguf-model.ts).
 */
import type { ModelConfig } from '../model/config/model-config';
import { tensorFromF32 } from '../tensor/tensor-data';
import { ROPE_TENSORS } from '../model/gguf/gguf-families';
import { ggufModelConfig, ggufRopeOf, readHfTensor } from '../model/gguf/gguf-model';
import { readGguf } from '../model/gguf/gguf-reader';
import type { ByteSource } from '../model/files/safetensors';
import type { TensorData } from '../tensor/tensor-data';
import { dequantize } from '../model/quant/dequant';

export async function referenceTensorsFromGguf(
  src: ByteSource,
  name = 'model.gguf',
): Promise<{ config: ModelConfig; tensors: TensorData[] }> {
  const file = await readGguf(src, name);
  const config = ggufModelConfig(file, name);
  const rope = file.tensors.filter((t) => ROPE_TENSORS.has(t.name)).map((info) => ({ src, info }));
  config.ropeScaling = await ggufRopeOf(file, config, rope, name);
  const tensors: TensorData[] = [];
  for (const t of file.tensors) {
    if (ROPE_TENSORS.has(t.name)) continue;
    const hf = await readHfTensor(src, t, config);
    tensors.push(tensorFromF32(hf.name, hf.shape, dequantize(hf.type, hf.data, t.elements), 'f32'));
  }
  return { config, tensors };
}
