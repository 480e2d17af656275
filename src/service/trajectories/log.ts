/**
 * Logging trajectories against a model (POST /v1/preview/models/{id}/log): stores the groups,
 * computes their metrics, and attaches them as "{split}/{metric}" to the latest checkpoint and
 * the model's run history, all in one transaction.
 *
 * Reference: specification endpoint 4; docs/reference/art-compat.md §1.6 and §6.
 */
import { recordTrajectoryLog } from '../../store/trajectory-logs';
import type { Principal } from '../principal';
import type { ServiceContext } from '../context';
import { InvalidInputError } from '../errors';
import { newId } from '../ids';
import { requireModel } from '../models';
import { prefixMetrics, trajectoryMetrics, type GroupForMetrics } from './metrics';

export interface LogTrajectories {
  split: string;
  trajectory_groups: (GroupForMetrics & Record<string, unknown>)[];
  model_id?: string | null;
}

export interface LogResult {
  step: number;
  metrics: Record<string, number>;
}

export async function logTrajectories(ctx: ServiceContext, caller: Principal, modelId: string, req: LogTrajectories): Promise<LogResult> {
  if (req.model_id != null && req.model_id !== modelId) {
    throw new InvalidInputError(
      ['body', 'model_id'],
      `model_id in the body (${req.model_id}) differs from the path (${modelId}).`,
      req.model_id,
    );
  }
  const model = await requireModel(ctx, caller, modelId);
  const metrics = prefixMetrics(req.split, trajectoryMetrics(req.trajectory_groups));
  const step = await recordTrajectoryLog(
    ctx.db,
    {
      id: newId(),
      modelId,
      principalId: caller.id,
      split: req.split,
      groups: req.trajectory_groups,
      metrics,
      createdAt: ctx.now(),
    },
    metrics,
    model.runId,
  );
  return { step, metrics };
}
