/**
 * The plug-in point between the job runner and a trainer. The runner calls `Trainer.train` for
 * one RUNNING job at a time with everything the trainer needs; the trainer reports progress
 * through the context and resolves when the new checkpoint is registered (or throws). The
 * runner then ends the job (COMPLETED + training_ended, or FAILED + training_failed).
 *
 * Not here: Hearth's trainer (lora-trainer.ts, over src/engine/train), the queue (runner.ts).
 */
import type { BaseModelEntry } from '../base-models/catalog';
import type { AdapterFiles } from '../adapters/peft-files';
import type { CheckpointRecord, JobProgressRecord, ModelRecord, TrainingJobRecord } from '../../store/schema';
import type { TrainingJobInput } from './job-input';
import type { SftExample } from './sft-data';

/** What a trainer saves after each optimizer step so another host can resume the job there. */
export type StepProgress = Pick<JobProgressRecord, 'stepsDone' | 'adapter' | 'optimizer' | 'optimizerStep' | 'precomputed'>;

export interface TrainerContext {
  /** The job, already RUNNING. */
  job: TrainingJobRecord;
  /** Its stored input (RL trajectory groups, or SFT config + data). */
  input: TrainingJobInput;
  model: ModelRecord;
  /** The model's base model from the catalogue; undefined if it left the catalogue. */
  baseModel: BaseModelEntry | undefined;
  /** The checkpoint training continues from (the latest), if any. */
  latestCheckpoint: CheckpointRecord | undefined;
  /** SFT jobs: the examples of the job's training data, in file order (throws for RL jobs). */
  loadSftExamples(): Promise<SftExample[]>;
  /** Reads a checkpoint's adapter; null for the step-0 identity adapter. */
  readAdapter(step: number): Promise<AdapterFiles | null>;
  /**
   * Emits `training_started` with `num_sequences` and `data`'s flat numbers; call once, before the
   * first gradient step. A resumed job whose previous host already emitted it emits nothing again.
   */
  started(numSequences: number, data?: Record<string, number>): Promise<void>;
  /**
   * Emits `gradient_step` with flat numeric metrics (loss, grad_norm, learning_rate, ...). With
   * `progress`, the step's progress is saved in the same transaction as the event.
   */
  gradientStep(metrics: Record<string, number>, progress?: StepProgress): Promise<void>;
  /**
   * Stores the trained adapter as the model's next checkpoint (latest step + 1), and marks the
   * job's progress as checkpointed in the same transaction.
   */
  registerCheckpoint(adapter: AdapterFiles, metrics?: Record<string, number>): Promise<CheckpointRecord>;
  /** The progress a previous host saved for this job (resumed jobs), if any. */
  savedProgress: JobProgressRecord | undefined;
  /** Aborted when the job must stop (its model was deleted, the engine is shutting down). */
  signal: AbortSignal;
  /** True when the job was RUNNING when a previous engine host died and is being resumed. */
  resumed: boolean;
}

export interface Trainer {
  /**
   * Whether a job found RUNNING at engine start (its host tab closed mid-job) is handed back to
   * this trainer with `resumed: true`. If false, the runner fails such jobs.
   */
  readonly resumesInterruptedJobs: boolean;
  train(ctx: TrainerContext): Promise<void>;
}
