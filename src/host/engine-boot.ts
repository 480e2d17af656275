/**
 * Starting an engine: open the database (running migrations), make sure the admin key exists,
 * set up the base-model catalogue and the job runner (recovering jobs a dead host left
 * RUNNING), build the /v1 app, and acquire the GPU in the background. Used by the engine worker
 * and, with another database name and no GPU, by Node tests.
 *
 * Not here: how requests reach the engine (engine-endpoint.ts, sw/).
 */
import type { Hono } from 'hono';
import { createApp } from '../api/app';
import type { AppEnv } from '../api/env';
import type { EngineCapabilities, InferenceEngine, ServedModel } from '../engine/generate/types';
import { webgpuCapabilities } from '../engine/generate/engine';
import { acquireGpu, type GpuContext } from '../engine/gpu/device';
import { MemoryFileCache, type ModelFileCache } from '../engine/model/sources/file-cache';
import { ensureAdmin } from '../service/api-keys';
import { BaseModelDownloads } from '../service/base-models/downloads';
import { BaseModelCatalog, bundledModels, cachedModels } from '../service/base-models/catalog';
import type { ServiceContext } from '../service/context';
import type { EngineInfo, GpuState } from '../service/engine-status';
import { UnavailableError } from '../service/errors';
import type { ResidentWeightsProvider } from '../engine/train/engine';
import type { TrainingEngine } from '../engine/train/types';
import { unavailableTrainer } from '../service/training/default-trainer';
import { LoraTrainer } from '../service/training/lora-trainer';
import { JobRunner } from '../service/training/runner';
import type { Trainer } from '../service/training/trainer';
import type { HearthDb } from '../store/schema';
import { openHearthDb } from '../store/open-db';
import { getEngineSettings } from '../store/settings';

/**
 * The generation engine the host builds (engine/generate/engine.ts `Engine`): chat completions,
 * the resident base weights and device a training engine is built over (`trainingEngineOver`), and
 * the models on the GPU, which the base-model list reports.
 */
export interface GpuInferenceEngine extends ResidentInferenceEngine, ResidentWeightsProvider {}

/** A generation engine of either backend, with the models it holds (the base-model list reports them). */
export interface ResidentInferenceEngine extends InferenceEngine {
  /** Models on the GPU (or in the CPU backend's memory). */
  readonly models: readonly { readonly served: ServedModel; readonly gpuBytes?: number }[];
}

/** Which backend serves chat: WebGPU when there is an adapter (else the CPU), or the CPU always. */
export type BackendPreference = 'auto' | 'cpu';

export interface EngineOptions {
  /** URL of models/index.json (the bundled base models). */
  manifestUrl: string;
  /** The app's origin, for relative training-data URLs. */
  baseUrl: string;
  /** navigator.gpu in the browser; undefined where there is none. */
  gpu: GPU | undefined;
  dbName?: string;
  fetch?: typeof fetch;
  trainer?: Trainer;
  /**
   * Builds the generation engine once the GPU is acquired (chat completions). Without it, chat
   * completions answer 503 saying this build has no inference engine.
   */
  inference?: (gpu: GpuContext, catalog: BaseModelCatalog) => GpuInferenceEngine | Promise<GpuInferenceEngine>;
  /**
   * Builds the LoRA training engine over the generation engine (same device, same resident base
   * weights). With it and `inference`, training jobs run Hearth's LoraTrainer; `trainer`
   * overrides both (tests). Without either, jobs fail saying training is unavailable.
   */
  training?: (inference: GpuInferenceEngine) => TrainingEngine | Promise<TrainingEngine>;
  /**
   * Builds the CPU backend (llama.cpp in WebAssembly), used for chat when WebGPU has no adapter or
   * the preference says "cpu"; `why` says which. Without it, no GPU means chat answers 503.
   */
  cpuInference?: (why: string, catalog: BaseModelCatalog) => ResidentInferenceEngine;
  /** The backend when none is stored (the stored choice, PATCH /v1/preview/engine, wins). Default 'auto'. */
  backendPreference?: BackendPreference;
  now?: () => number;
  maxBodyBytes?: number;
  /** Largest base-model upload (default 2 GiB); tests set a small one. */
  maxUploadBytes?: number;
  /**
   * Where downloaded and uploaded base models are kept (IndexedDB in the engine worker). Default:
   * in memory, for this engine's lifetime only (Node tests).
   */
  modelFiles?: ModelFileCache;
}

export interface Engine {
  app: Hono<AppEnv>;
  db: HearthDb;
  runner: JobRunner;
  services: ServiceContext;
  adminKey: string;
  /** The engine's GPU device, or null when WebGPU is unavailable (the reason is in the status). */
  gpu: Promise<GpuContext | null>;
  /** Resolves when the GPU is acquired or known to be unavailable. */
  gpuSettled: Promise<GpuState>;
  close(): Promise<void>;
}

/** The generation engine for a use other than chat, with that use named in the error. */
async function engineFor(use: string, inference: (() => Promise<GpuInferenceEngine>) | undefined): Promise<GpuInferenceEngine> {
  if (!inference) throw new UnavailableError(`${use} is not available in this build of Hearth: it has no inference engine.`);
  try {
    return await inference();
  } catch (err) {
    throw new UnavailableError(`${use} needs the GPU engine: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export async function bootEngine(opts: EngineOptions): Promise<Engine> {
  const now = opts.now ?? Date.now;
  const db = await openHearthDb(opts.dbName);
  const adminKey = await ensureAdmin(db, now());
  const catalog = new BaseModelCatalog([bundledModels(opts.manifestUrl, opts.fetch ?? fetch), cachedModels(db)]);
  const modelFiles = opts.modelFiles ?? new MemoryFileCache();
  const base = { db, catalog, now, fetch: opts.fetch ?? fetch, baseUrl: opts.baseUrl, modelFiles };
  // The trainer reaches the engines through `generation` (the generation engine, set below once the
  // GPU is being acquired), which is complete before any job runs.
  let generation: (() => Promise<GpuInferenceEngine>) | undefined;
  let training: Promise<TrainingEngine> | undefined;
  const trainer =
    opts.trainer ??
    (opts.training && opts.inference
      ? new LoraTrainer({
          inference: () => engineFor('Training', generation),
          training: () =>
            (training ??= engineFor('Training', generation)
              .then((engine) => opts.training!(engine))
              .catch((err: unknown) => {
                training = undefined;
                throw err;
              })),
        })
      : unavailableTrainer);
  const runner = new JobRunner(base, trainer);
  const services: ServiceContext = { ...base, jobs: runner };
  services.baseModels = new BaseModelDownloads({ db, catalog, cache: modelFiles, fetch: base.fetch, now, jobs: runner });

  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((l) => l());
  runner.onChange(changed);

  let gpu: GpuState = { status: 'acquiring' };
  const acquired = acquireGpu(opts.gpu);
  const gpuSettled = acquired.then(
    (ctx): GpuState => ({ status: 'ready', description: ctx.description }),
    (err: unknown): GpuState => ({ status: 'unavailable', reason: err instanceof Error ? err.message : String(err) }),
  );
  void gpuSettled.then((state) => {
    gpu = state;
    changed();
  });
  // Which backend serves chat, decided once the GPU is acquired or known to be missing.
  let capabilities: EngineCapabilities | null = null;
  if (opts.inference || opts.cpuInference) {
    const build = opts.inference;
    const buildCpu = opts.cpuInference;
    const preference = (await getEngineSettings(db))?.backend ?? opts.backendPreference ?? 'auto';
    // The CPU engine is cheap to make (nothing loads before a request); the WebGPU one is built on first use.
    const decided: Promise<{ cpu: ResidentInferenceEngine } | { gpu: GpuContext }> = (async () => {
      if (preference === 'cpu' && buildCpu) return { cpu: buildCpu('chosen in Settings', catalog) };
      try {
        return { gpu: await acquired };
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (buildCpu) return { cpu: buildCpu(`no WebGPU adapter: ${reason}`, catalog) };
        throw new UnavailableError(`Chat completions need WebGPU: ${reason}`);
      }
    })();
    void decided.then(
      (d) => {
        capabilities = 'cpu' in d ? d.cpu.capabilities : webgpuCapabilities(d.gpu.description);
        changed();
      },
      () => undefined,
    );
    let inference: Promise<ResidentInferenceEngine> | undefined;
    let built: ResidentInferenceEngine | undefined;
    services.residentModels = () =>
      (built?.models ?? []).map((m) => ({ id: m.served.id, maxModelLen: m.served.maxModelLen, gpuBytes: m.gpuBytes ?? null }));
    const chosen = async (): Promise<ResidentInferenceEngine> => {
      const d = await decided;
      if ('cpu' in d) return d.cpu;
      if (!build) throw new UnavailableError('Chat completions are not available in this build of Hearth: it has no WebGPU engine.');
      return build(d.gpu, catalog);
    };
    services.inference = () =>
      (inference ??= chosen()
        .then((engine) => (built = engine))
        .catch((err: unknown) => {
          // A failed build is tried again by the next request (the GPU's absence does not change).
          if (!(err instanceof UnavailableError)) inference = undefined;
          throw err;
        }));
    services.capabilities = () =>
      decided.then(
        () => capabilities,
        () => null,
      );
    // The trainer needs the WebGPU engine (its device and resident weights).
    generation = async () => {
      const engine = await services.inference!();
      if (!('residentWeights' in engine)) throw new UnavailableError(`Training ${engine.capabilities.missing}.`);
      return engine as GpuInferenceEngine;
    };
  }

  const startedAt = now();
  const info: EngineInfo = { startedAt, gpu: () => gpu, runningJobId: () => runner.runningJobId, capabilities: () => capabilities };
  const app = createApp({
    services,
    engine: info,
    maxBodyBytes: opts.maxBodyBytes,
    maxUploadBytes: opts.maxUploadBytes,
    onEngineChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  });
  await runner.start();
  // Downloads a previous engine left running (the tab reloaded, or the host moved) continue here.
  void services.baseModels.resumeAll().catch((err: unknown) => console.error('[hearth] resuming base-model downloads failed:', err));
  return {
    app,
    db,
    runner,
    services,
    adminKey,
    gpu: acquired.catch(() => null),
    gpuSettled,
    async close() {
      services.baseModels?.stopAll();
      await services.baseModels?.idle();
      runner.stop();
      await runner.idle();
      db.close();
    },
  };
}
