/**
 * The trainer of an engine started without GPU engines (engine-boot.ts without `inference` and
 * `training`, as in Node tests): it reports that training started on no sequences and fails the
 * job with a message saying training is not available. Jobs still go through the whole queue and
 * state machine, so clients see the real event protocol.
 *
 * Not here: Hearth's trainer (lora-trainer.ts).
 */
import type { Trainer, TrainerContext } from './trainer';

export const TRAINING_UNAVAILABLE =
  'Training is not available yet in this version of Hearth: the LoRA trainer has not been built. ' +
  'The job and its input were stored; create the job again once training is available.';

export class TrainingUnavailableError extends Error {
  override name = 'TrainingUnavailableError';
}

export const unavailableTrainer: Trainer = {
  resumesInterruptedJobs: false,
  async train(ctx: TrainerContext): Promise<void> {
    await ctx.started(0);
    throw new TrainingUnavailableError(TRAINING_UNAVAILABLE);
  },
};
