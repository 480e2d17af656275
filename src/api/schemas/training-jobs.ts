/**
 * RL and SFT training-job creation bodies. Every experimental_config key may be null, which
 * means "use the default" (ART builds the dict with every key present). Unknown keys are
 * refused, so a setting Hearth would not honour is never silently accepted.
 *
 * Reference: specification "Experimental RL configuration", "SFT job creation body";
 * docs/reference/art-compat.md §1.7 (era b/c keys, era d additions), §1.10 and §4 (SFT config).
 */
import { z } from 'zod';
import { dict, list } from './lists';
import { MAX_TRAJECTORY_ITEMS, TrajectoryGroup } from './trajectories';

/** Most learning rates in an SFT config's per-batch list (issue 26: every list has a cap). */
const MAX_LEARNING_RATES = 1_000_000;

const positive = z.number().gt(0);

export const ExperimentalConfig = z.strictObject({
  // The specification's eleven keys (kimi_k2_tau is its "modelfamily_k2_tau").
  advantage_balance: z.number().min(-1).max(1).nullish(),
  epsilon: positive.nullish(),
  epsilon_high: positive.nullish(),
  importance_sampling_level: z.enum(['token', 'sequence', 'average', 'geometric_average']).nullish(),
  kimi_k2_tau: z.number().min(0).nullish(),
  /** The specification's neutral name for kimi_k2_tau (an alias; giving both with different values is a 422). */
  modelfamily_k2_tau: z.number().min(0).nullish(),
  learning_rate: positive.nullish(),
  mask_prob_ratio: z.boolean().nullish(),
  max_negative_advantage_importance_sampling_weight: positive.nullish(),
  ppo: z.boolean().nullish(),
  precalculate_logprobs: z.boolean().nullish(),
  scale_rewards: z.boolean().nullish(),
  // Keys newer ART clients send (docs/reference/art-compat.md §1.7, era d).
  allow_training_without_logprobs: z.boolean().nullish(),
  kl_penalty_coef: z.number().min(0).nullish(),
  kl_penalty_reference_step: z.int().min(0).nullish(),
  kl_penalty_source: z.string().nullish(),
  kl_penalty_step_lag: z.int().min(0).nullish(),
  kl_ref_adapter_path: z.string().nullish(),
  logprob_calculation_chunk_size: z.int().min(1).nullish(),
  loss_fn: z.enum(['cispo', 'ppo']).nullish(),
  normalize_advantages: z.boolean().nullish(),
  num_trajectories_learning_rate_multiplier_power: z.number().nullish(),
  packed_sequence_length: z.int().min(1).nullish(),
  plot_tensors: z.boolean().nullish(),
  scale_learning_rate_by_reward_std_dev: z.boolean().nullish(),
  truncated_importance_sampling: positive.nullish(),
});
export type ExperimentalConfig = z.infer<typeof ExperimentalConfig>;

export const CreateRlJobRequest = z.strictObject({
  model_id: z.uuid(),
  trajectory_groups: list(TrajectoryGroup, MAX_TRAJECTORY_ITEMS, 1),
  experimental_config: ExperimentalConfig.nullish(),
});
export type CreateRlJobRequest = z.infer<typeof CreateRlJobRequest>;

export const SftConfig = z.strictObject({
  /** Omitted when ART's user says "auto": the server default (2) applies. */
  batch_size: z.int().min(1).nullish(),
  /** One rate for every batch, or one per batch (the list length must equal the batch count). */
  learning_rate: z.union([positive, list(positive, MAX_LEARNING_RATES, 1)]).nullish(),
  assistant_turns: z.enum(['all', 'last']).nullish(),
  metric_logging: z.strictObject({ enabled: z.boolean().nullish(), target_training_step: z.int().min(0).nullish() }).nullish(),
});
export type SftConfig = z.infer<typeof SftConfig>;

export const CreateSftJobRequest = z
  .strictObject({
    model_id: z.uuid(),
    training_data_url: z.string().min(1).optional(),
    /** The name an intermediate ART client used for the same field. */
    training_folder_url: z.string().min(1).optional(),
    config: SftConfig.nullish(),
    experimental_config: dict(1024).nullish(),
  })
  .superRefine((body, ctx) => {
    if (body.training_data_url === undefined && body.training_folder_url === undefined) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', path: ['training_data_url'], message: 'Field required' });
    }
  });
export type CreateSftJobRequest = z.infer<typeof CreateSftJobRequest>;
