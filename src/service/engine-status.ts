/**
 * What the engine reports about itself (GET /v1/preview/engine, Hearth's own extension): the
 * GPU it acquired at start or why it has none, its state, its job queue and the base models it
 * knows. A missing GPU never stops the /v1/preview API: storage and jobs work without it.
 */
import type { EngineCapabilities } from '../engine/generate/types';
import type { GpuDescription } from '../engine/gpu/device';
import { getEngineSettings, putEngineSettings } from '../store/settings';
import { getJobForRunner, jobsWithStatus } from '../store/training-jobs';
import type { Principal } from './principal';
import type { ServiceContext } from './context';

export type GpuState =
  | { status: 'acquiring' }
  | { status: 'ready'; description: GpuDescription }
  | { status: 'unavailable'; reason: string };

export interface EngineInfo {
  startedAt: number;
  gpu(): GpuState;
  runningJobId(): string | undefined;
  /** The backend serving chat and what it can do; null until decided (or when nothing can generate). */
  capabilities?(): EngineCapabilities | null;
}

/** The backend in the status: which one runs and what it cannot do, each with the reason. */
export interface BackendView {
  kind: 'webgpu' | 'cpu';
  description: string;
  /** Features this backend refuses (training, beam_search, ...), each with why. */
  unsupported: { feature: string; reason: string }[];
}

const FEATURES: readonly [keyof EngineCapabilities, string][] = [
  ['training', 'training'],
  ['beamSearch', 'use_beam_search'],
  ['promptLogprobs', 'prompt_logprobs'],
  ['structuredOutputs', 'structured_outputs'],
  ['loraAdapters', 'checkpoints'],
  ['multiTokenBadWords', 'bad_words'],
];

function backendView(c: EngineCapabilities): BackendView {
  return {
    kind: c.backend,
    description: c.description,
    unsupported: FEATURES.filter(([k]) => c[k] === false).map(([, feature]) => ({ feature, reason: c.missing })),
  };
}

export interface EngineStatusView {
  object: 'engine';
  state: 'starting' | 'ready';
  started_at: string;
  gpu: GpuDescription | null;
  gpu_status: GpuState['status'];
  gpu_error: string | null;
  /** The backend serving chat (WebGPU, or the CPU without it); null until decided or when none can. */
  backend: BackendView | null;
  /** The stored choice ("auto" or "cpu", PATCH /v1/preview/engine); it applies when the engine starts. */
  backend_preference: 'auto' | 'cpu';
  /**
   * `running` is the running job's id when the caller may see it (its own, or any for the admin
   * key); `training` says whether any job runs. Other principals' job ids are never shown (issue 10, item 12).
   */
  jobs: { pending: number; running: string | null; training: boolean };
  base_models: { id: string; architecture: string; parameters: number; default: boolean; description: string }[];
}

function backendOf(info: EngineInfo): BackendView | null {
  const c = info.capabilities?.() ?? null;
  return c ? backendView(c) : null;
}

export async function engineStatus(ctx: ServiceContext, info: EngineInfo, caller: Principal): Promise<EngineStatusView> {
  const gpu = info.gpu();
  const runningId = info.runningJobId();
  const runningJob = runningId ? await getJobForRunner(ctx.db, runningId) : undefined;
  const visible = runningJob && (caller.admin || runningJob.principalId === caller.id) ? runningJob.id : null;
  const [pending, models] = await Promise.all([jobsWithStatus(ctx.db, 'PENDING'), ctx.catalog.list()]);
  return {
    object: 'engine',
    state: gpu.status === 'acquiring' ? 'starting' : 'ready',
    started_at: new Date(info.startedAt).toISOString(),
    gpu: gpu.status === 'ready' ? gpu.description : null,
    gpu_status: gpu.status,
    gpu_error: gpu.status === 'unavailable' ? gpu.reason : null,
    backend: backendOf(info),
    backend_preference: (await getEngineSettings(ctx.db))?.backend ?? 'auto',
    // A job failed while storage was full is still PENDING in the store until its end fits.
    jobs: { pending: pending.filter((j) => !ctx.jobs.unsavedEnd(j.id)).length, running: visible, training: runningId !== undefined },
    base_models: models.map((m) => ({
      id: m.id,
      architecture: m.architecture,
      parameters: m.parameters,
      default: m.default,
      description: m.description,
    })),
  };
}

/** Stores the backend choice; the engine reads it when it starts (the next reload of its tab). */
export async function setBackendPreference(ctx: ServiceContext, backend: 'auto' | 'cpu'): Promise<void> {
  await putEngineSettings(ctx.db, { id: 'engine', backend, updatedAt: ctx.now() });
}
