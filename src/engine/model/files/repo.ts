/**
 * loadModelFiles: a Hugging Face model repository, from any ModelSource, read and validated into
 * LoadedModelFiles (config, generation defaults, tokenizer, chat templates, and a stream of weights).
 *
 * Files (transformers' names): config.json, generation_config.json (optional), tokenizer.json,
 * tokenizer_config.json (optional), chat_template.jinja (optional, wins over the config's
 * chat_template), and either model.safetensors or model.safetensors.index.json + its shards.
 *
 * Nothing is half-loaded: every file is fetched and every safetensors header is validated, and
 * the tensor names, shapes and dtypes are checked against the config's parameter plan, before
 * `tensors()` hands out a single weight. A problem is an error naming the file and what is wrong.
 * Not here: uploading weights to the GPU (WeightSet), where files come from (sources/).
 */
import type { DType } from '../../tensor/dtype';
import type { ModelConfig } from '../config/model-config';
import { ChatTemplates } from '../text/chat-template';
import { NO_GENERATION_DEFAULTS, parseGenerationConfig, unionTokenIds, type GenerationDefaults } from '../config/generation-config';
import { parseModelConfig } from '../config/hf-config';
import type { QuantizeTarget } from '../../tensor/dtype';
import { SafetensorsFile, WEIGHT_DTYPES } from './safetensors';
import type { DownloadProgress, ModelSource } from '../sources/source';
import type { TensorData } from '../../tensor/tensor-data';
import { ModelTokenizer } from '../text/tokenizer';
import { checkAgainstPlan, checkpointTensorName, isIgnorableTensor } from '../weights/parameter-plan';

/** A repository that is incomplete or inconsistent; the message names the file and the problem. */
export class RepositoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RepositoryError';
  }
}

export interface LoadOptions {
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /**
   * Awaited with the files about to be parsed, once their bytes are in, and with null once they
   * are parsed. A caller that records it knows, after the engine died, which model's files killed
   * it while being parsed, and need not parse them again at every start (issue 26).
   */
  parsing?: (files: string | null) => Promise<void>;
}

export interface WeightEntry {
  name: string;
  dtype: DType;
  shape: number[];
  /** The safetensors file holding it. */
  file: string;
  bytes: number;
  /** Its name in that file when the engine's differs (a multimodal Gemma 3's language_model.*). */
  fileName?: string;
}

export interface LoadedModelFiles {
  /** The source's id and label (cache key and display). */
  sourceId: string;
  sourceLabel: string;
  config: ModelConfig;
  generation: GenerationDefaults;
  tokenizer: ModelTokenizer;
  chatTemplates: ChatTemplates;
  /** Stop ids: config.json ∪ generation_config.json ∪ the tokenizer's eos_token. */
  eosTokenIds: number[];
  /** Every weight the engine uses (the plan's tensors), in file order. */
  weights: WeightEntry[];
  /** Bytes of `weights` as loaded (on the GPU): their file bytes, or their blocks when quantized on load. */
  weightBytes: number;
  /** Bytes of the weights in the files, where they differ from weightBytes (quant/quantize-on-load.ts). */
  fileWeightBytes?: number;
  /** Streams the weights one tensor at a time, in `weights` order. */
  tensors(): AsyncGenerator<TensorData>;
  /**
   * A model quantized on load (quant/quantize-on-load.ts): the dtype each quantized tensor becomes and the
   * file's own tensors, so the engine can make the blocks on the GPU (quant/quantize-upload.ts); `tensors()`
   * makes them on the CPU.
   */
  quantizeOnLoad?: QuantizeOnLoadPlan;
  /** What the loader accepted but a person should know, e.g. added tokens past the embedding rows dropped (issue 21). */
  warnings?: string[];
  /** The parsed JSON files as found, for storing or exporting the model. */
  files: {
    config: unknown;
    generationConfig: unknown;
    tokenizer: unknown;
    tokenizerConfig: unknown;
    chatTemplate: string | null;
  };
}

export interface QuantizeOnLoadPlan {
  /** The block dtype of each tensor that is quantized, by name. */
  dtypes: ReadonlyMap<string, QuantizeTarget>;
  /** The weights as the files hold them (f32, f16, bf16), in `weights` order. */
  fileTensors(): AsyncGenerator<TensorData>;
}

const INDEX_FILE = 'model.safetensors.index.json';
const SINGLE_FILE = 'model.safetensors';

const MiB = 1024 * 1024;
/**
 * Most bytes of each repository file that is read whole into one string and parsed on the engine
 * thread (issue 26: none had a cap, so a 2 GB config.json was read and parsed whole). Each is
 * several times the largest published one: Gemma 3's tokenizer.json is 33 MB, its
 * tokenizer_config.json 1.2 MB. Any other small file: 1 MiB.
 */
const SMALL_FILE_CAPS: Record<string, number> = {
  'tokenizer.json': 128 * MiB,
  'tokenizer_config.json': 16 * MiB,
  [INDEX_FILE]: 16 * MiB,
};
const SMALL_FILE_CAP = MiB;

/** The text of a repository file read whole, refused (naming the file and the cap) before reading when it is over its cap. */
export async function smallFileText(blob: Blob, file: string): Promise<string> {
  const cap = SMALL_FILE_CAPS[file] ?? SMALL_FILE_CAP;
  if (blob.size > cap) throw new RepositoryError(`${file} is ${blob.size} bytes; Hearth reads at most ${cap / MiB} MiB of it`);
  return blob.text();
}

export async function loadModelFiles(source: ModelSource, options: LoadOptions = {}): Promise<LoadedModelFiles> {
  const repo = await repoReader(source, options);
  // Small files first: an unsupported architecture fails before any weight is downloaded.
  const small = await readSmallFiles(repo);
  const { config } = small;
  const { shards, weightMap } = await weightLayout(repo.open, repo.where, repo.listing);
  const opened = await openShards(repo, shards, weightMap !== null);
  const weights = weightEntries(config, repo.where, opened, weightMap);
  return {
    sourceId: source.id,
    sourceLabel: repo.where,
    config,
    generation: small.generation,
    tokenizer: small.tokenizer,
    chatTemplates: small.chatTemplates,
    eosTokenIds: unionTokenIds(
      config.eosTokenIds,
      small.generation.eosTokenIds,
      small.tokenizer.eosTokenId != null ? [small.tokenizer.eosTokenId] : [],
    ),
    weights,
    weightBytes: weights.reduce((s, w) => s + w.bytes, 0),
    async *tensors() {
      for (const w of weights) {
        const t = await opened.get(w.file)!.read(w.fileName ?? w.name);
        yield w.fileName ? { ...t, name: w.name } : t;
      }
    },
    files: small.files,
    warnings: small.warnings,
  };
}

interface RepoReader {
  where: string;
  listing: string[] | null;
  open: (file: string) => Promise<Blob | null>;
  readText: (file: string, required: boolean) => Promise<string | null>;
  parsing: (files: string | null) => Promise<void>;
}

/** A small file's JSON, or a RepositoryError naming it. */
function parseJson(text: string | null, file: string): unknown {
  if (text == null) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new RepositoryError(`${file}: not valid JSON (${(e as Error).message})`);
  }
}

/** Reads a source's files by name, with the listing's absences and errors that name the file. */
async function repoReader(source: ModelSource, options: LoadOptions): Promise<RepoReader> {
  const listing = await source.list();
  const where = source.label;
  const open = async (file: string): Promise<Blob | null> => {
    if (listing && !listing.includes(file)) return null;
    options.signal?.throwIfAborted();
    return source.open(file, { signal: options.signal, onProgress: options.onProgress });
  };
  const readText = async (file: string, required: boolean): Promise<string | null> => {
    const blob = await open(file);
    if (!blob) {
      if (required) throw new RepositoryError(`${file} is missing from ${where}`);
      return null;
    }
    return smallFileText(blob, file);
  };
  const parsing = async (files: string | null) => options.parsing?.(files);
  return { where, listing, open, readText, parsing };
}

/** config.json, generation_config.json, the tokenizer and the chat templates, parsed and checked together. */
async function readSmallFiles(repo: RepoReader) {
  // config.json first and alone: an unsupported architecture fails before anything else is fetched.
  // Each file's bytes are in before the parse marker is set (a tab closed mid-download is no crash).
  const configText = await repo.readText('config.json', true);
  await repo.parsing('config.json');
  const configJson = parseJson(configText, 'config.json');
  const config = parseModelConfig(configJson);
  await repo.parsing(null);
  // The other files' bytes first, then their parsing, the step that runs a hostile file's content.
  const generationText = await repo.readText('generation_config.json', false);
  const tokenizerText = await repo.readText('tokenizer.json', true);
  const tokenizerConfigText = await repo.readText('tokenizer_config.json', false);
  const chatTemplateFile = await repo.readText('chat_template.jinja', false);
  const present = {
    'generation_config.json': generationText,
    'tokenizer.json': tokenizerText,
    'tokenizer_config.json': tokenizerConfigText,
    'chat_template.jinja': chatTemplateFile,
  };
  await repo.parsing(
    Object.entries(present)
      .filter(([, text]) => text != null)
      .map(([file]) => file)
      .join(', '),
  );
  const generationJson = parseJson(generationText, 'generation_config.json');
  const generation = generationJson == null ? NO_GENERATION_DEFAULTS : parseGenerationConfig(generationJson);
  const tokenizerJson = parseJson(tokenizerText, 'tokenizer.json');
  const tokenizerConfig = parseJson(tokenizerConfigText, 'tokenizer_config.json');
  const tokenizer = ModelTokenizer.fromJson(tokenizerJson, tokenizerConfig ?? {});
  const warnings = tokenizer
    .fitToRows(config.vocabSize, tokenizerJson)
    .map(
      (t) =>
        `tokenizer.json's added token ${JSON.stringify(t.content)} (id ${t.id}) is past the model's ${config.vocabSize} embedding rows (config.json vocab_size): it is dropped, and a prompt that contains it is refused`,
    );
  const configTemplate = (tokenizerConfig as Record<string, unknown> | null)?.chat_template ?? null;
  const chatTemplates = new ChatTemplates(chatTemplateFile, configTemplate, tokenizer.specialTokens);
  await repo.parsing(null);
  const files: LoadedModelFiles['files'] = {
    config: configJson,
    generationConfig: generationJson,
    tokenizer: tokenizerJson,
    tokenizerConfig,
    chatTemplate: chatTemplateFile,
  };
  return { config, generation, tokenizer, chatTemplates, files, warnings };
}

/** Every weight file, its safetensors header validated before any weight is read. */
async function openShards(repo: RepoReader, shards: string[], indexed: boolean): Promise<Map<string, SafetensorsFile>> {
  const opened = new Map<string, SafetensorsFile>();
  for (const shard of shards) {
    const blob = await repo.open(shard);
    if (!blob) {
      throw new RepositoryError(
        indexed
          ? `${INDEX_FILE} lists ${shard}, which is missing from ${repo.where}`
          : `${repo.where} has no ${SINGLE_FILE} or ${INDEX_FILE}`,
      );
    }
    opened.set(shard, await SafetensorsFile.open(blob, shard));
  }
  return opened;
}

/**
 * The weights the engine uses, checked against the config's parameter plan (names, shapes, dtypes),
 * in file order within each shard and shards in name order: sequential reads of each file.
 */
function weightEntries(
  config: ModelConfig,
  where: string,
  opened: Map<string, SafetensorsFile>,
  weightMap: Record<string, string> | null,
): WeightEntry[] {
  // Where each tensor lives: the index's weight_map for sharded repositories, else the one file.
  const located = new Map<string, string>();
  if (weightMap) {
    for (const [name, shard] of Object.entries(weightMap)) {
      if (!opened.get(shard)!.entries.has(name)) {
        throw new RepositoryError(`${INDEX_FILE} puts ${name} in ${shard}, but ${shard} has no such tensor`);
      }
      located.set(name, shard);
    }
  } else {
    for (const name of opened.get(SINGLE_FILE)!.names) located.set(name, SINGLE_FILE);
  }
  // The engine's name of each tensor (a multimodal checkpoint's text model renamed, its vision tower left out).
  const fileNames = new Map<string, string>();
  for (const name of located.keys()) {
    const engineName = checkpointTensorName(config, name);
    if (engineName === null) continue;
    if (fileNames.has(engineName)) throw new RepositoryError(`${where}: ${fileNames.get(engineName)} and ${name} are both ${engineName}`);
    fileNames.set(engineName, name);
  }
  const headerOf = (name: string) => {
    const fileName = fileNames.get(name)!;
    return opened.get(located.get(fileName)!)!.entry(fileName);
  };
  const problem = checkAgainstPlan(
    config,
    [...fileNames.keys()].map((name) => ({ name, shape: headerOf(name).shape })),
  );
  if (problem) throw new RepositoryError(`${where}: ${problem}`);

  const weights: WeightEntry[] = [];
  for (const [name, fileName] of fileNames) {
    if (isIgnorableTensor(config, name)) continue;
    const file = located.get(fileName)!;
    const e = headerOf(name);
    const dtype = WEIGHT_DTYPES[e.dtype];
    if (!dtype)
      throw new RepositoryError(`${file}: tensor ${fileName} has dtype ${e.dtype}; Hearth loads weights only as F32, F16 or BF16`);
    weights.push({ name, dtype, shape: e.shape, file, bytes: e.end - e.begin, ...(fileName !== name ? { fileName } : {}) });
  }
  weights.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : headerOf(a.name).begin - headerOf(b.name).begin));
  return weights;
}

/** Which safetensors files hold the weights: the index's shards, or model.safetensors. */
async function weightLayout(
  open: (file: string) => Promise<Blob | null>,
  where: string,
  listing: string[] | null,
): Promise<{ shards: string[]; weightMap: Record<string, string> | null }> {
  const indexBlob = await open(INDEX_FILE);
  if (indexBlob) {
    let index: unknown;
    const text = await smallFileText(indexBlob, INDEX_FILE);
    try {
      index = JSON.parse(text);
    } catch (e) {
      throw new RepositoryError(`${INDEX_FILE}: not valid JSON (${(e as Error).message})`);
    }
    const map = (index as { weight_map?: unknown } | null)?.weight_map;
    if (!map || typeof map !== 'object' || Array.isArray(map)) {
      throw new RepositoryError(`${INDEX_FILE}: missing "weight_map" (tensor name -> file)`);
    }
    for (const [name, file] of Object.entries(map)) {
      if (typeof file !== 'string' || !file.endsWith('.safetensors') || file.includes('..') || file.startsWith('/')) {
        throw new RepositoryError(
          `${INDEX_FILE}: weight_map["${name}"] must name a .safetensors file in the repository (got ${JSON.stringify(file)})`,
        );
      }
    }
    const weightMap = map as Record<string, string>;
    return { shards: [...new Set(Object.values(weightMap))].sort(), weightMap };
  }
  if (listing && !listing.includes(SINGLE_FILE)) {
    const other = listing.find((f) => f.endsWith('.bin') || f.endsWith('.pt') || f.endsWith('.gguf'));
    throw new RepositoryError(
      `${where} has no ${SINGLE_FILE} or ${INDEX_FILE}` + (other ? ` (found ${other}; Hearth loads only safetensors weights)` : ''),
    );
  }
  return { shards: [SINGLE_FILE], weightMap: null };
}
