/**
 * Records as the API shows them: snake_case fields, ISO timestamps, never a principal id or a
 * secret. One function per resource, used by the route files.
 */
import type { CheckpointRecord, JobEventRecord, ModelRecord, TrainingJobRecord } from '../store/schema';

/** A stored millisecond timestamp as the API shows it (ISO 8601, UTC); null stays null. */
export function iso(t: number): string;
export function iso(t: number | null): string | null;
export function iso(t: number | null): string | null {
  return t === null ? null : new Date(t).toISOString();
}

export function modelView(m: ModelRecord) {
  return {
    id: m.id,
    object: 'model' as const,
    entity: m.entity,
    project: m.project,
    name: m.name,
    base_model: m.baseModel,
    run_id: m.runId,
    created_at: iso(m.createdAt),
  };
}

export function checkpointView(c: CheckpointRecord) {
  return { id: c.id, object: 'checkpoint' as const, step: c.step, metrics: c.metrics, created_at: iso(c.createdAt) };
}

export function jobView(j: TrainingJobRecord) {
  return {
    id: j.id,
    object: 'training_job' as const,
    model_id: j.modelId,
    kind: j.kind,
    status: j.status,
    created_at: iso(j.createdAt),
    training_start: iso(j.trainingStart),
    training_end: iso(j.trainingEnd),
    error_message: j.errorMessage,
  };
}

export function eventView(e: JobEventRecord) {
  return { id: e.id, object: 'training_job_event' as const, type: e.type, data: e.data, created_at: iso(e.createdAt) };
}
