/**
 * The peers section's model files (peers.ts): random weights with the exact shapes of SmolLM2-135M,
 * Qwen2.5-0.5B and Llama-3.2-1B (bench-models.ts BENCH_SHAPES) as GGUF files in F16, Q8_0 and
 * Q4_K_M, written the way llama.cpp's converter and quantizer write those models (tensor names,
 * metadata keys, Llama 3's `rope_freqs`, Q4_K_M's per-tensor types: quantized.ts), so that the
 * very same file goes to Hearth and to llama.cpp.
 *
 * Made on the machine that runs the bench, in seconds: random bytes from crypto's generator, then
 * every block's f16 scales tamed (random-blocks.ts) so values stay near ±sqrt(3 / columns); no
 * quantizer runs. F16 values are random signs and mantissas under one exponent. The vocabulary is
 * byte-level BPE (the 256 byte symbols, then numbered filler tokens up to the shape's rows, one
 * end-of-text token, no merges): the bench feeds token ids, so only its size matters.
 *
 * Node only (writes files). Not here: running the engines (peers.ts, llama-cpp-peer.mjs).
 */
import { randomFillSync } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BYTE_TO_CHAR } from '../../src/engine/model/text/byte-level';
import type { DType } from '../../src/engine/tensor/dtype';
import type { ModelConfig } from '../../src/engine/model/config/model-config';
import { ggufHyperparameters, llama3RopeFactors } from '../../src/engine/model/gguf/gguf-hparams';
import { ggufTensorName } from '../../src/engine/model/gguf/gguf-model';
import { ggufLayout, gv, writeGgufHeader, type GgufTensorInput } from '../../src/engine/model/gguf/gguf-writer';
import type { GgufMetadataEntry } from '../../src/engine/model/gguf/gguf-reader';
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { ggmlName, isBlockDType, tensorBytes } from '../../src/engine/tensor/dtype';
import { numel } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { Rng } from '../../src/engine/tensor/random';
import { tameBlockScales } from '../../src/engine/reference/random-blocks';
import { BENCH_SHAPES } from './bench-models';
import { tensorDtype, type BenchFormat } from './quantized';

export const PEER_SHAPES = ['smollm2-135m', 'qwen2.5-0.5b', 'llama-3.2-1b'];
export const PEER_FORMATS: BenchFormat[] = ['f16', 'q8_0', 'q4_k_m'];

export interface PeerModelFile {
  /** `<shape>@<format>`, as the other sections name models. */
  name: string;
  path: string;
  config: ModelConfig;
  bytes: number;
  /** Layers of the real model (the file may keep fewer). */
  totalLayers: number;
  /** Weight bytes a decode step reads per token (every matrix once). */
  weightBytes: number;
}

/** The shape's config, cut to its first `layers` layers. */
export function peerConfig(shape: string, layers?: number): { config: ModelConfig; totalLayers: number } {
  const hf = BENCH_SHAPES[shape];
  if (!hf || !PEER_SHAPES.includes(shape)) throw new Error(`peers: unknown shape ${shape} (${PEER_SHAPES.join(', ')})`);
  const full = parseModelConfig(hf);
  const numLayers = Math.min(full.numLayers, layers ?? full.numLayers);
  return { config: { ...full, numLayers, layerTypes: full.layerTypes.slice(0, numLayers) }, totalLayers: full.numLayers };
}

function metadata(config: ModelConfig, name: string): Array<[string, GgufMetadataEntry]> {
  const a = config.arch;
  const V = config.vocabSize;
  const tokens = [...BYTE_TO_CHAR, ...Array.from({ length: V - BYTE_TO_CHAR.length - 1 }, (_, i) => `tok${i}`), '<|endoftext|>'];
  return [
    ...ggufHyperparameters(config, a),
    ['general.name', gv.str(`hearth-peers-${name}`)],
    ['tokenizer.ggml.model', gv.str('gpt2')],
    ['tokenizer.ggml.pre', gv.str(a === 'qwen2' ? 'qwen2' : 'llama-bpe')],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === V - 1 ? 3 : 1)))],
    ['tokenizer.ggml.merges', gv.strs([])],
    ['tokenizer.ggml.eos_token_id', gv.u32(V - 1)],
    ['tokenizer.ggml.add_bos_token', gv.bool(false)],
  ];
}

/** One tensor of the file: its GGUF entry and a maker of its bytes (made when written, one at a time). */
interface PlannedTensor extends Omit<GgufTensorInput, 'data'> {
  bytes: number;
  make: () => Uint8Array;
}

/** Random f16 values: random sign and mantissa, the exponent of `amplitude`'s power of two below it. */
function randomF16(elements: number, amplitude: number): Uint8Array {
  const half = new Uint16Array(elements);
  randomFillSync(half);
  const exponent = Math.max(1, Math.min(29, 15 + Math.floor(Math.log2(amplitude)) - 1)) << 10;
  for (let i = 0; i < elements; i++) half[i] = (half[i] & 0x83ff) | exponent;
  return new Uint8Array(half.buffer);
}

function planTensors(config: ModelConfig, format: BenchFormat, seed: number): PlannedTensor[] {
  const rng = new Rng(seed);
  const out: PlannedTensor[] = [];
  for (const { name, shape } of planParameters(config)) {
    const gguf = ggufTensorName(name);
    if (!gguf) throw new Error(`peers: no GGUF name for ${name}`);
    const n = numel(shape);
    const ne = [...shape].reverse();
    if (shape.length === 1) {
      // Norm weights near 1, biases near 0.
      const center = name.endsWith('norm.weight') ? 1 : 0;
      const make = () => new Uint8Array(Float32Array.from({ length: n }, () => center + 0.1 * (rng.uniform() - 0.5)).buffer);
      out.push({ name: gguf, ne, type: 'F32', bytes: 4 * n, make });
      continue;
    }
    const amplitude = Math.sqrt(3 / shape[1]);
    const dtype: DType = format === 'f16' ? 'f16' : tensorDtype(format, name, shape[1], config);
    const type = isBlockDType(dtype) ? ggmlName(dtype) : dtype.toUpperCase();
    const bytes = tensorBytes(dtype, n)!;
    const make = isBlockDType(dtype)
      ? () => {
          const data = new Uint8Array(bytes);
          randomFillSync(data);
          tameBlockScales(type, data, amplitude, rng);
          return data;
        }
      : () => randomF16(n, amplitude);
    out.push({ name: gguf, ne, type, bytes, make });
  }
  const factors = llama3RopeFactors(config);
  if (factors)
    out.push({
      name: 'rope_freqs.weight',
      ne: [factors.length],
      type: 'F32',
      bytes: 4 * factors.length,
      make: () => new Uint8Array(factors.buffer),
    });
  return out;
}

/**
 * The GGUF file of `shape` in `format` under `dir` (made unless a file of the right size is there),
 * cut to `layers` layers when given. Written tensor by tensor: a 1B model in F16 is never held whole.
 */
export function peerModelFile(dir: string, shape: string, format: BenchFormat, layers?: number): PeerModelFile {
  const { config, totalLayers } = peerConfig(shape, layers);
  const name = `${shape}@${format}`;
  const tensors = planTensors(config, format, 7);
  const alignment = 32; // general.alignment (gguf-hparams.ts)
  const header = writeGgufHeader({
    metadata: metadata(config, name),
    tensors: ggufLayout(
      tensors,
      alignment,
      tensors.map((t) => t.bytes),
    ),
  });
  const pad = (n: number) => (alignment - (n % alignment)) % alignment;
  const bytes = header.length + tensors.reduce((s, t) => s + t.bytes + pad(t.bytes), 0);
  const weightBytes = tensors.reduce((s, t) => s + t.bytes, 0);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${shape}-${format}-${config.numLayers}L.gguf`);
  if (!existsSync(path) || statSync(path).size !== bytes) {
    const partial = `${path}.partial`;
    const fd = openSync(partial, 'w');
    try {
      writeSync(fd, header);
      for (const t of tensors) {
        writeSync(fd, t.make());
        if (pad(t.bytes)) writeSync(fd, new Uint8Array(pad(t.bytes)));
      }
    } finally {
      closeSync(fd);
    }
    renameSync(partial, path);
  }
  return { name, path, config, bytes, totalLayers, weightBytes };
}
