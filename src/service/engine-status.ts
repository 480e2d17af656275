/**
 * What the engine reports about itself (GET /v1/preview/engine, Hearth's own extension): the
 * GPU it acquired at start or why it has none, its state, its job queue and the base models it
 * knows. A missing GPU never stops the /v1/preview API: storage and jobs work without it.
 */
import type { GpuDescription } from '../engine/gpu/device';
import { jobsWithStatus } from '../store/training-jobs';
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
  jobs: { pending: number; running: string | null };
  base_models: { id: string; architecture: string; parameters: number; default: boolean; description: string }[];
}

export async function engineStatus(ctx: ServiceContext, info: EngineInfo): Promise<EngineStatusView> {
  const gpu = info.gpu();
  const [pending, models] = await Promise.all([jobsWithStatus(ctx.db, 'PENDING'), ctx.catalog.list()]);
  return {
    object: 'engine',
    state: gpu.status === 'acquiring' ? 'starting' : 'ready',
    started_at: new Date(info.startedAt).toISOString(),
    gpu: gpu.status === 'ready' ? gpu.description : null,
    gpu_status: gpu.status,
    gpu_error: gpu.status === 'unavailable' ? gpu.reason : null,
    jobs: { pending: pending.length, running: info.runningJobId() ?? null },
    base_models: models.map((m) => ({
      id: m.id,
      architecture: m.architecture,
      parameters: m.parameters,
      default: m.default,
      description: m.description,
    })),
  };
}
