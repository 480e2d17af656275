/**
 * loadGgufModelFiles: a GGUF model (one .gguf file or the parts of a split one) from any
 * ModelSource, read and validated into the same LoadedModelFiles as loadModelFiles (files/repo.ts)
 * gives for a safetensors repository, so the engine runs it unchanged.
 *
 * - The first part's metadata gives the config (gguf-model.ts), the tokenizer and chat template
 *   (gguf-tokenizer.ts) and the stop ids (llama.cpp's end-of-generation set); it is read and
 *   checked before any other part is opened.
 * - Tensors keep the file's type: 'f32', 'f16', 'bf16' or a block type by its lowercase ggml name
 *   ('q8_0', 'q4_k', ...); llama's q/k rows are un-permuted, Llama 3's `rope_freqs` becomes the
 *   config's freq_factors scaling.
 * - Nothing is half-loaded: every part is parsed and validated (gguf-reader.ts), and every tensor's
 *   name, shape and type checked against planParameters, before `tensors()` hands out one weight.
 *   A problem is a RepositoryError naming the file and the key or tensor.
 * Not here: downloading and caching (sources/), GPU upload (WeightSet), dequantizing.
 */
import type { DType } from '../../tensor/dtype';
import type { ModelConfig } from '../config/model-config';
import { ChatTemplates } from '../text/chat-template';
import { unionTokenIds, type GenerationDefaults } from '../config/generation-config';
import { RepositoryError, type LoadOptions, type LoadedModelFiles, type WeightEntry } from '../files/repo';
import { blobBytes, type ByteSource } from '../files/safetensors';
import type { ModelSource } from '../sources/source';
import { ModelTokenizer } from '../text/tokenizer';
import { checkAgainstPlan } from '../weights/parameter-plan';
import { ROPE_TENSORS } from './gguf-families';
import { ggufArchitecture, ggufModelConfig, hfTensorName, ggufRopeOf, readHfTensor } from './gguf-model';
import { GgufError, readGguf, type GgufFile, type GgufTensorInfo } from './gguf-reader';
import { checkSplitPart, orderGgufParts } from './gguf-split';
import { ggufTokenizerFiles } from './gguf-tokenizer';

/** GGML type name -> the engine's dtype. The block types are DType names on the quantized path
 *  (the q-kernels work adds them to the union), so the map is typed loosely and cast once. */
const GGUF_DTYPES: Readonly<Record<string, string>> = {
  F32: 'f32',
  F16: 'f16',
  BF16: 'bf16',
  Q8_0: 'q8_0',
  Q4_0: 'q4_0',
  Q4_1: 'q4_1',
  Q5_0: 'q5_0',
  Q5_1: 'q5_1',
  Q2_K: 'q2_k',
  Q3_K: 'q3_k',
  Q4_K: 'q4_k',
  Q5_K: 'q5_k',
  Q6_K: 'q6_k',
};

interface Part {
  file: string;
  src: ByteSource;
  gguf: GgufFile;
}

interface Located {
  part: Part;
  info: GgufTensorInfo;
  hfName: string;
  dtype: DType;
}

export async function loadGgufModelFiles(source: ModelSource, files: string[], options: LoadOptions = {}): Promise<LoadedModelFiles> {
  const where = source.label;
  try {
    return await load(source, files, options);
  } catch (e) {
    if (e instanceof GgufError) throw new RepositoryError(`${where}: ${e.message}`);
    throw e;
  }
}

async function load(source: ModelSource, files: string[], options: LoadOptions): Promise<LoadedModelFiles> {
  const names = orderGgufParts(files);
  const openPart = async (file: string): Promise<Part> => {
    options.signal?.throwIfAborted();
    const blob = await source.open(file, { signal: options.signal, onProgress: options.onProgress });
    if (!blob) throw new RepositoryError(`${file} is missing from ${source.label}`);
    const src = blobBytes(blob);
    await options.parsing?.(file);
    return { file, src, gguf: await readGguf(src, file) };
  };

  // The first part alone decides config and tokenizer: a file Hearth cannot run fails before the other parts are fetched.
  const first = await openPart(names[0]);
  checkSplitPart(first.gguf, first.file, 0, names.length);
  // A split model's first part may hold few of its tensors: its config is read once all parts are.
  const singleConfig = names.length === 1 ? ggufModelConfig(first.gguf, first.file) : (ggufArchitecture(first.gguf, first.file), null);
  const tokenizerFiles = ggufTokenizerFiles(first.gguf, first.file);
  const tokenizer = ModelTokenizer.fromJson(tokenizerFiles.tokenizer, tokenizerFiles.tokenizerConfig);
  const chatTemplates = new ChatTemplates(null, tokenizerFiles.tokenizerConfig.chat_template ?? null, tokenizer.specialTokens);
  await options.parsing?.(null);

  const parts = [first];
  for (let i = 1; i < names.length; i++) {
    const part = await openPart(names[i]);
    await options.parsing?.(null);
    checkSplitPart(part.gguf, part.file, i, names.length);
    parts.push(part);
  }
  const all = parts.flatMap((part) => part.gguf.tensors.map((info) => ({ part, info })));
  if (parts.length > 1) for (const p of parts) checkSplitPart(p.gguf, p.file, parts.indexOf(p), parts.length, all.length);
  const seen = new Set<string>();
  for (const { part, info } of all) {
    if (seen.has(info.name)) throw new GgufError(`${part.file}: tensor ${info.name} appears in two parts`);
    seen.add(info.name);
  }

  // With every part's tensors known: the config again (tied embeddings, biases and norms are read from which tensors exist).
  const config: ModelConfig = singleConfig ?? ggufModelConfig({ ...first.gguf, tensors: all.map((t) => t.info) }, first.file);
  checkConfig(config, first.file);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new GgufError(
      `${first.file}: tokenizer.ggml.tokens has ${tokenizer.vocabSize} tokens, more than the model's ${config.vocabSize}`,
    );
  }
  const located: Located[] = [];
  const rope = all.filter((t) => ROPE_TENSORS.has(t.info.name)).map((t) => ({ src: t.part.src, info: t.info }));
  config.ropeScaling = await ggufRopeOf(first.gguf, config, rope, first.file);
  for (const { part, info } of all) {
    if (ROPE_TENSORS.has(info.name)) continue;
    const hfName = hfTensorName(info.name, config.arch);
    if (!hfName) throw new GgufError(`${part.file}: tensor ${info.name} is not part of a ${config.arch} model Hearth runs`);
    const dtype = GGUF_DTYPES[info.type.name] as DType | undefined;
    if (!dtype) throw new GgufError(`${part.file}: tensor ${info.name} has type ${info.type.name}, which Hearth does not load`);
    if (info.ne.length === 1 && info.type.blockSize > 1) {
      throw new GgufError(
        `${part.file}: tensor ${info.name} is a vector in ${info.type.name} blocks; norms and biases must be F32, F16 or BF16`,
      );
    }
    located.push({ part, info, hfName, dtype });
  }
  const problem = checkAgainstPlan(
    config,
    located.map((t) => ({ name: t.hfName, shape: [...t.info.ne].reverse() })),
  );
  if (problem) throw new GgufError(`${names.join(', ')}: ${problem}`);

  // File order within each part, parts in order: sequential reads of each file.
  located.sort((a, b) => parts.indexOf(a.part) - parts.indexOf(b.part) || a.info.begin - b.info.begin);
  const weights: WeightEntry[] = located.map((t) => ({
    name: t.hfName,
    dtype: t.dtype,
    shape: [...t.info.ne].reverse(),
    file: t.part.file,
    bytes: t.info.end - t.info.begin,
  }));
  const eogTokenIds = tokenizerFiles.eogTokenIds;
  const generation: GenerationDefaults = { eosTokenIds: eogTokenIds, bosTokenId: tokenizer.bosTokenId, padTokenId: tokenizer.padTokenId };

  return {
    sourceId: source.id,
    sourceLabel: source.label,
    config,
    generation,
    tokenizer,
    chatTemplates,
    eosTokenIds: unionTokenIds(config.eosTokenIds, eogTokenIds, tokenizer.eosTokenId != null ? [tokenizer.eosTokenId] : []),
    weights,
    weightBytes: weights.reduce((s, w) => s + w.bytes, 0),
    async *tensors() {
      for (const t of located) {
        const hf = await readHfTensor(t.part.src, t.info, config);
        yield { name: hf.name, dtype: t.dtype, shape: hf.shape, data: hf.data };
      }
    },
    files: {
      config: null,
      generationConfig: null,
      tokenizer: tokenizerFiles.tokenizer,
      tokenizerConfig: tokenizerFiles.tokenizerConfig,
      chatTemplate: null,
    },
  };
}

/** What gguf-model.ts reads as numbers must also be whole and consistent for the engine's shapes. */
function checkConfig(c: ModelConfig, name: string): void {
  const whole = {
    hiddenSize: c.hiddenSize,
    numHeads: c.numHeads,
    numKvHeads: c.numKvHeads,
    headDim: c.headDim,
    intermediateSize: c.intermediateSize,
    vocabSize: c.vocabSize,
    maxPositionEmbeddings: c.maxPositionEmbeddings,
  };
  for (const [field, v] of Object.entries(whole)) {
    if (!Number.isSafeInteger(v)) throw new GgufError(`${name}: the model's ${field} (${v}) is not a whole number`);
  }
  if (c.numHeads % c.numKvHeads !== 0) {
    throw new GgufError(
      `${name}: ${c.arch}.attention.head_count (${c.numHeads}) must be a multiple of ${c.arch}.attention.head_count_kv (${c.numKvHeads})`,
    );
  }
  if (c.headDim % 2 !== 0) throw new GgufError(`${name}: the head size ${c.headDim} must be even for RoPE`);
}
