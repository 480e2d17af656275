/**
 * What every service function works with: the database, the base-model catalogue, the job
 * queue, a clock, and how to fetch training data. Built once per engine (src/host/engine-boot.ts)
 * and by tests.
 */
import type { EngineCapabilities, InferenceEngine } from '../engine/generate/types';
import type { ModelFileCache } from '../engine/model/sources/file-cache';
import type { HearthDb } from '../store/schema';
import type { BaseModelDownloads } from './base-models/downloads';
import type { BaseModelCatalog } from './base-models/catalog';
import type { UnsavedEnd } from './training/job-ends';

/** The part of the job runner that request handlers need. */
export interface JobQueue {
  /** A job was queued: start it if nothing is running. */
  wake(): void;
  /** Stop a job that is running or queued (its model is being deleted). */
  cancel(jobId: string, reason: string): void;
  /**
   * Ends a queued job FAILED with `reason`, also when storage is full (then it reads FAILED at
   * once and is stored later). JobStatusConflictError when it is no longer PENDING.
   */
  failQueued(jobId: string, reason: string): Promise<void>;
  /** The end the runner decided for a job but could not store yet (storage is full), if any. */
  unsavedEnd(jobId: string): UnsavedEnd | undefined;
}

export interface ServiceContext {
  db: HearthDb;
  catalog: BaseModelCatalog;
  jobs: JobQueue;
  now(): number;
  /** Fetches SFT training data by URL (the engine worker's fetch in the app). */
  fetch: typeof fetch;
  /** Base for relative training-data URLs: the app's origin. */
  baseUrl: string;
  /**
   * The generation engine for chat completions. Rejects (with the reason: no GPU, the engine
   * failed to start) when there is none; absent where nothing can generate (most tests).
   */
  inference?: () => Promise<InferenceEngine>;
  /**
   * What the backend that serves chat can do, once it is decided (WebGPU, or the CPU without an
   * adapter); null when nothing can generate. Training jobs are refused at creation by it.
   */
  capabilities?: () => Promise<EngineCapabilities | null>;
  /** The downloaded model-file cache (IndexedDB in the app), for storage sums; absent in most tests. */
  modelFiles?: ModelFileCache;
  /** Downloads and uploads of base models (/v1/preview/base-models); set by the engine's boot. */
  baseModels?: BaseModelDownloads;
  /** The base models resident on the GPU now (none until the inference engine exists). */
  residentModels?: () => { id: string; maxModelLen: number; gpuBytes?: number | null }[];
}
