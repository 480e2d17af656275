/**
 * The IndexedDB schema of Hearth's own database ("hearth"): every record kind the /v1 service
 * keeps, typed as an idb `DBSchema`, and the list of its object stores.
 *
 * Not here: opening the database and the upgrade ladder that creates and migrates it
 * (open-db.ts), the repositories that read and write records (one file per kind beside this
 * one), and downloaded weight files, which live in the separate "hearth-model-files" database
 * (model-files.ts, owned by the model loader). Reference: idb README "TypeScript".
 *
 * Timestamps are epoch milliseconds; the API formats them. Every record that belongs to someone
 * carries `principalId`, and every repository function checks it.
 */
import type { DBSchema, IDBPDatabase } from 'idb';

/** Someone who owns models and jobs; the admin principal is created on first start. */
export interface PrincipalRecord {
  id: string;
  name: string;
  /** Default entity filled into models registered with `entity: null` (ART sends null). */
  entity: string;
  admin: boolean;
  createdAt: number;
}

/** An API key, stored hashed: the secret itself is shown once and never kept (see owner below). */
export interface ApiKeyRecord {
  id: string;
  principalId: string;
  name: string;
  /** Hex SHA-256 of the whole key. */
  hash: string;
  /** The first characters of the key, so a person can tell keys apart in a list. */
  prefix: string;
  createdAt: number;
}

/**
 * The local owner's copy of the admin key. The browser origin is the trust boundary: the person
 * using this browser is the admin, and the app's own pages show them their key.
 */
export interface OwnerRecord {
  id: 'admin';
  principalId: string;
  keyId: string;
  key: string;
}

export interface LoraConfig {
  r: number;
  alpha: number;
  targetModules: string[];
  /** PEFT use_rslora (scale alpha / sqrt(r)); absent means false (models imported from such adapters set it). */
  useRslora?: boolean;
}

export interface ModelRecord {
  id: string;
  principalId: string;
  entity: string;
  project: string;
  name: string;
  baseModel: string;
  /** Id of the experiment record (RunRecord.id), returned as `run_id`. */
  runId: string;
  lora: LoraConfig;
  createdAt: number;
}

export interface CheckpointRecord {
  id: string;
  modelId: string;
  principalId: string;
  step: number;
  metrics: Record<string, number>;
  /** Names of the files stored in checkpointFiles; empty for the step-0 identity adapter. */
  files: string[];
  createdAt: number;
}

/** One file of a checkpoint's PEFT adapter: adapter_config.json or adapter_model.safetensors. */
export interface CheckpointFileRecord {
  checkpointId: string;
  name: string;
  bytes: ArrayBuffer;
}

export interface RunHistoryEntry {
  step: number;
  metrics: Record<string, number>;
  recordedAt: number;
}

/** Hearth's experiment-tracking run of a model; its metrics history is in `runHistory`. */
export interface RunRecord {
  id: string;
  modelId: string;
  principalId: string;
  createdAt: number;
}

/** One /log call's metrics in a run's history, appended and never rewritten (schema v4, issue 10). */
export interface RunHistoryRecord extends RunHistoryEntry {
  runId: string;
  /** 1, 2, ... in the order the run's entries were recorded. */
  seq: number;
}

/** One /log call; its groups are `trajectoryGroups` records (schema v4). */
export interface TrajectoryLogRecord {
  id: string;
  modelId: string;
  principalId: string;
  split: string;
  /** The latest checkpoint step when the groups were logged. */
  step: number;
  numGroups: number;
  metrics: Record<string, number>;
  createdAt: number;
}

/**
 * One logged TrajectoryGroup, stored alone so that a page of them reads only what it returns
 * through the indexes below (issue 10).
 */
export interface TrajectoryGroupRecord {
  /** "{log id}:{index in that log}": the API's group id and `after` cursor. */
  id: string;
  modelId: string;
  principalId: string;
  logId: string;
  /** 1, 2, ... in the model's logging order (logs in time order, groups in their log's order). */
  seq: number;
  split: string;
  step: number;
  loggedAt: number;
  /** The TrajectoryGroup exactly as validated (unknown fields kept). */
  group: unknown;
}

export type TrainingJobKind = 'rl' | 'sft';
export type TrainingJobStatus = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED';

export interface TrainingJobRecord {
  id: string;
  principalId: string;
  modelId: string;
  kind: TrainingJobKind;
  status: TrainingJobStatus;
  /** Queue order: jobs of an engine run one at a time, lowest first. */
  queuedAt: number;
  createdAt: number;
  trainingStart: number | null;
  trainingEnd: number | null;
  errorMessage: string | null;
  /** Sequence number the next event gets. */
  nextEventSeq: number;
}

/** A job's input, kept apart from the job so listing jobs never loads trajectories. */
export interface TrainingJobInputRecord {
  jobId: string;
  input: unknown;
}

export interface JobEventRecord {
  id: string;
  jobId: string;
  principalId: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: number;
}

export interface ArtifactFile {
  name: string;
  bytes: ArrayBuffer;
}

/** Data a model owns besides checkpoints, such as an SFT job's resolved training data. */
export interface ArtifactRecord {
  id: string;
  principalId: string;
  modelId: string;
  kind: 'sft-data';
  name: string;
  sourceUrl: string;
  files: ArtifactFile[];
  createdAt: number;
}

/**
 * A running job's last completed optimizer step, saved crash-safely after every step together
 * with its gradient_step event, so the host that takes over after the tab closed resumes there.
 * Deleted when the job ends and with its model.
 */
export interface JobProgressRecord {
  jobId: string;
  modelId: string;
  principalId: string;
  /** Optimizer steps of the job's plan completed so far. */
  stepsDone: number;
  /** The LoRA adapter after those steps: adapter_model.safetensors bytes (f32, PEFT names). */
  adapter: ArrayBuffer;
  /** AdamW moments as safetensors bytes (adapter names + `.exp_avg` / `.exp_avg_sq`), and its step count. */
  optimizer: ArrayBuffer;
  optimizerStep: number;
  /** precalculate_logprobs: the logprobs computed before step 1, per planned sequence (f32, safetensors). */
  precomputed: ArrayBuffer | null;
  /** Set once the job's checkpoint is stored (in the same transaction): only the terminal event is left. */
  checkpointStep: number | null;
  updatedAt: number;
}

/**
 * A base model added beyond the bundled ones: downloaded from a Hugging Face repository (or a
 * mirror of one) or a URL, or uploaded as picked files. Its bytes live in the model-file cache
 * ("hearth-model-files") under `cacheKey`; this record says where they came from and how far the
 * download got, so a reload shows it and the next engine resumes it.
 */
export interface BaseModelRecord {
  /** The catalogue id: "org/name" (or "org/name@revision"), the URL, or the id given to picked files. */
  id: string;
  source: 'huggingface' | 'url' | 'files';
  /** The repo id (huggingface), the URL (url), or the picked folder's label (files). */
  location: string;
  revision: string | null;
  /** Hugging Face or mirror base URL (huggingface only). */
  hfBase: string | null;
  /** Key of the model's files in the model-file cache. */
  cacheKey: string;
  /** downloading: an engine should be fetching it; paused: stopped by a network failure (POST again resumes). */
  status: 'downloading' | 'paused' | 'cached' | 'error';
  error: string | null;
  /** Known once config.json and the weights' headers were read. */
  architecture: string | null;
  parameters: number | null;
  bytes: number | null;
  maxPositionEmbeddings: number | null;
  /** The weights' format (absent in records from before GGUF: safetensors). */
  format?: 'safetensors' | 'gguf';
  /** A GGUF model: its file, or the ordered parts of a split one, as named in the repository or picked. */
  ggufFiles?: string[];
  /** A GGUF model's quantization (llama.cpp's file type name: Q4_K_M, Q8_0, F16), once its header was read. */
  quantization?: string | null;
  /**
   * A safetensors model loaded quantized: its matrices become Q8_0 or Q4_K blocks as they load
   * (engine/model/quant/quantize-on-load.ts), chosen when it was added; `quantization` shows it as
   * "Q8_0" / "Q4_K". Absent: file precision.
   */
  quantizeOnLoad?: 'q8_0' | 'q4_k';
  /** GPU bytes of the weights when they differ from `bytes` (the files'): a model quantized on load. */
  gpuBytes?: number | null;
  /** What the loader accepted but warns about (added tokens past the embedding rows dropped, issue 21); absent: none. */
  warnings?: string[];
  startedAt: number;
  updatedAt: number;
  /**
   * The files a download's engine is parsing now (set once their bytes are in, cleared when they
   * are parsed). Found set at engine start, it means the previous engine died parsing them: the
   * download ends in "error" instead of being resumed, and parsed, again at every start (issue 26).
   */
  parsing?: string | null;
}

/**
 * The Hugging Face access settings (one record, id "huggingface"). The token is a secret: it is
 * read only by the downloader and never returned by any route (only whether one is set).
 */
export interface HubSettingsRecord {
  id: 'huggingface';
  token: string | null;
  /** Base URL of the mirror downloads use by default and the token may be sent to. */
  mirror: string | null;
  updatedAt: number;
}

/**
 * The engine's settings (one record, id "engine"): which backend serves chat. "auto" is WebGPU
 * when the browser has an adapter, else the CPU (llama.cpp in WebAssembly); "cpu" is always the
 * CPU. Read when the engine starts.
 */
export interface EngineSettingsRecord {
  id: 'engine';
  backend: 'auto' | 'cpu';
  updatedAt: number;
}

export interface HearthSchema extends DBSchema {
  principals: { key: string; value: PrincipalRecord };
  apiKeys: { key: string; value: ApiKeyRecord; indexes: { 'by-hash': string; 'by-principal': string } };
  owner: { key: string; value: OwnerRecord };
  models: {
    key: string;
    value: ModelRecord;
    indexes: { 'by-principal': string; 'by-name': [string, string, string, string] };
  };
  checkpoints: { key: string; value: CheckpointRecord; indexes: { 'by-model-step': [string, number] } };
  checkpointFiles: { key: [string, string]; value: CheckpointFileRecord };
  runs: { key: string; value: RunRecord; indexes: { 'by-model': string } };
  trajectoryLogs: { key: string; value: TrajectoryLogRecord; indexes: { 'by-model': string } };
  trajectoryGroups: {
    key: string;
    value: TrajectoryGroupRecord;
    indexes: {
      'by-model-seq': [string, number];
      'by-model-split-seq': [string, string, number];
      'by-model-step-seq': [string, number, number];
      'by-model-split-step-seq': [string, string, number, number];
    };
  };
  runHistory: { key: [string, number]; value: RunHistoryRecord };
  trainingJobs: {
    key: string;
    value: TrainingJobRecord;
    indexes: { 'by-model': string; 'by-status-queue': [string, number] };
  };
  jobInputs: { key: string; value: TrainingJobInputRecord };
  jobEvents: { key: string; value: JobEventRecord; indexes: { 'by-job-seq': [string, number] } };
  artifacts: { key: string; value: ArtifactRecord; indexes: { 'by-model': string } };
  jobProgress: { key: string; value: JobProgressRecord; indexes: { 'by-model': string } };
  baseModels: { key: string; value: BaseModelRecord };
  settings: { key: string; value: HubSettingsRecord | EngineSettingsRecord };
}

export type HearthDb = IDBPDatabase<HearthSchema>;
export type StoreName = (typeof ALL_STORES)[number];

export const ALL_STORES = [
  'principals',
  'apiKeys',
  'owner',
  'models',
  'checkpoints',
  'checkpointFiles',
  'runs',
  'trajectoryLogs',
  'trajectoryGroups',
  'runHistory',
  'trainingJobs',
  'jobInputs',
  'jobEvents',
  'artifacts',
  'jobProgress',
  'baseModels',
  'settings',
] as const;
