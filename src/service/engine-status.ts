/**
 * What the engine reports about itself (GET /v1/preview/engine, Hearth's own extension): the
 * GPU it acquired at start or why it has none, its state, its job queue and the base models it
 * knows. A missing GPU never stops the /v1/preview API: storage and jobs work without it.
 */
import type { GpuDescription } from '../engine/gpu/device';
import { getJobForRunner, jobsWithStatus } from '../store/training-jobs';
import type { Principal } from './api-keys';
import type { ServiceContext } from './context';

export type GpuState =
  | { status: 'acquiring' }
  | { status: 'ready'; description: GpuDescription }
  | { status: 'unavailable'; reason: string };

export interface EngineInfo {
  startedAt: number;
  gpu(): GpuState;
  runningJobId(): string | undefined;
}

export interface EngineStatusView {
  object: 'engine';
  state: 'starting' | 'ready';
  started_at: string;
  gpu: GpuDescription | null;
  gpu_status: GpuState['status'];
  gpu_error: string | null;
  /**
   * `running` is the running job's id when the caller may see it (its own, or any for the admin
   * key); `training` says whether any job runs. Other principals' job ids are never shown (issue 10, item 12).
   */
  jobs: { pending: number; running: string | null; training: boolean };
  base_models: { id: string; architecture: string; parameters: number; default: boolean; description: string }[];
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
    jobs: { pending: pending.length, running: visible, training: runningId !== undefined },
    base_models: models.map((m) => ({
      id: m.id,
      architecture: m.architecture,
      parameters: m.parameters,
      default: m.default,
      description: m.description,
    })),
  };
}
