/**
 * The API's resources as the UI reads them (the JSON of /v1/preview; see README "Endpoints" and
 * the shapes agreed for the UI endpoints). Types only.
 */

export interface Model {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string | null;
  created_at: string | null;
}

export interface Checkpoint {
  id: string;
  step: number;
  metrics: Record<string, number | boolean>;
  created_at: string | null;
}

export type JobStatus = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED';

export interface TrainingJob {
  id: string;
  model_id: string;
  kind: string;
  status: JobStatus;
  created_at: string | null;
  training_start: string | null;
  training_end: string | null;
  error_message: string | null;
}

export interface JobEvent {
  id: string;
  type: 'training_started' | 'gradient_step' | 'training_ended' | 'training_failed';
  data: Record<string, number | string>;
  created_at: string | null;
}

export interface BaseModel {
  id: string;
  /** null while a download has not read the model's config yet. */
  architecture: string | null;
  parameters: number | null;
  bytes: number | null;
  source: 'bundled' | 'huggingface' | 'url' | 'files';
  status: 'available' | 'downloading' | 'paused' | 'cached' | 'error';
  cached_bytes: number;
  download: { loaded: number; total: number; bytes_per_second: number; started_at: string | number; error: string | null } | null;
  default: boolean;
  /** What a bundled model is for; null for downloaded and uploaded ones. */
  description: string | null;
  loaded: boolean;
  max_model_len: number | null;
  origin:
    | { type: 'bundled' }
    | { type: 'huggingface'; repo: string; revision: string | null; mirror: string | null; file: string | null }
    | { type: 'url'; url: string }
    | { type: 'upload' };
  format: 'safetensors' | 'gguf';
  /** A GGUF's quantization (Q4_K_M, Q8_0, F16), or the blocks a safetensors model is quantized to on load (Q8_0, Q4_K). */
  quantization: string | null;
  /** Measured while on the GPU, else the weights' bytes. */
  gpu_bytes: number | null;
  /** What loading it warned about (tokenizer tokens past the embedding rows, dropped). */
  warnings: string[];
}

/** GET /v1/preview/settings: whether a Hugging Face token is set (never the token) and the mirror. */
export interface HubSettings {
  huggingface: { token_set: boolean; mirror: string | null };
}

export interface ApiKey {
  id: string;
  name: string;
  entity?: string;
  prefix?: string;
  created_at?: string | null;
  revoked_at?: string | null;
  admin?: boolean;
  key?: string;
}

export interface RunRecord {
  model_id: string;
  history: { step: number; split: string; metrics: Record<string, number | boolean>; logged_at: string | null }[];
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface MessageLike {
  role?: string;
  content?: unknown;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string | null;
  name?: string | null;
  /** A Choice carries its message here. */
  message?: { role: 'assistant'; content?: string | null; tool_calls?: ToolCall[] | null; refusal?: string | null };
  finish_reason?: string;
}

export interface Trajectory {
  messages_and_choices: MessageLike[];
  reward: number;
  metrics?: Record<string, number | boolean> | null;
  metadata?: Record<string, unknown> | null;
  tools?: unknown[] | null;
  logs?: string[] | null;
}

export interface TrajectoryGroup {
  trajectories: Trajectory[];
  exceptions?: { type: string; message: string; traceback?: string | null }[] | null;
  metrics?: Record<string, number | boolean> | null;
  metadata?: Record<string, unknown> | null;
}

export interface LoggedGroup {
  id: string;
  split: string;
  step: number;
  logged_at: string | null;
  group: TrajectoryGroup;
}

export interface StorageReport {
  usage: number;
  quota: number;
  kinds: { weights: number; checkpoints: number; trajectories: number; artifacts: number; other: number };
}
