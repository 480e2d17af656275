/**
 * The training-job state machine and the event-order rules ART's client relies on.
 *
 *   PENDING --start--> RUNNING --complete--> COMPLETED
 *      |                  |
 *      +------fail--------+-----fail-------> FAILED
 *
 * Events: `training_started` (once, data.num_sequences) before any `gradient_step` (flat numeric
 * data), then exactly one terminal event, `training_ended` or `training_failed`
 * (data.error_message), emitted by the runner together with the terminal status.
 *
 * Pure: the runner applies these rules; the store applies the status change and its events in
 * one transaction. Reference: docs/reference/art-compat.md §1.8, §1.9.
 */
import type { TrainingJobStatus } from '../../store/schema';

export type JobTransition = 'start' | 'complete' | 'fail';

const TRANSITIONS: Record<JobTransition, { from: readonly TrainingJobStatus[]; to: TrainingJobStatus }> = {
  start: { from: ['PENDING'], to: 'RUNNING' },
  complete: { from: ['RUNNING'], to: 'COMPLETED' },
  fail: { from: ['PENDING', 'RUNNING'], to: 'FAILED' },
};

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
}

/** The statuses a transition may start from (the store's compare-and-set uses them). */
export function transitionSources(t: JobTransition): readonly TrainingJobStatus[] {
  return TRANSITIONS[t].from;
}

export function nextStatus(current: TrainingJobStatus, t: JobTransition): TrainingJobStatus {
  const rule = TRANSITIONS[t];
  if (!rule.from.includes(current)) {
    throw new IllegalTransitionError(`A ${current} training job cannot ${t}; only a ${rule.from.join(' or ')} one can.`);
  }
  return rule.to;
}

export function isTerminal(status: TrainingJobStatus): boolean {
  return status === 'COMPLETED' || status === 'FAILED';
}

export type JobEventType = 'training_started' | 'gradient_step' | 'training_ended' | 'training_failed';

/** What a running job has emitted so far; decides which event may come next. */
export class JobProgress {
  started = false;
  numSequences: number | null = null;
  gradientSteps = 0;
  terminal = false;

  /** Throws if `type` may not be emitted now; otherwise records it. */
  record(type: JobEventType, data: Record<string, unknown>): void {
    if (this.terminal) throw new IllegalTransitionError(`No event may follow the job's terminal event (got ${type}).`);
    switch (type) {
      case 'training_started': {
        if (this.started) throw new IllegalTransitionError('training_started was already emitted.');
        const n = data.num_sequences;
        if (!Number.isInteger(n) || (n as number) < 0) {
          throw new IllegalTransitionError('training_started needs data.num_sequences, a non-negative integer.');
        }
        this.started = true;
        this.numSequences = n as number;
        return;
      }
      case 'gradient_step':
        if (!this.started) throw new IllegalTransitionError('gradient_step before training_started.');
        checkFlatNumbers(data);
        this.gradientSteps += 1;
        return;
      case 'training_ended':
      case 'training_failed':
        this.terminal = true;
        return;
    }
  }
}

/** ART does float(v) on every gradient_step value: only finite numbers are allowed. */
export function checkFlatNumbers(data: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new IllegalTransitionError(`gradient_step data.${key} must be a finite number, got ${JSON.stringify(value)}.`);
    }
  }
}
