/**
 * An RL job's `experimental_config` resolved into what Hearth trains with: the engine's LossSpec
 * (docs/reference/art-compat.md §3.4) and the data settings (§3.1, §3.3). Null or absent means the default.
 *
 * Every key the API accepts is honoured or refused: a key Hearth does not implement is accepted
 * only at its default (null, false or 0) and refused with a 422 naming it otherwise, because a
 * setting silently ignored would train something other than what the client asked for.
 *
 * Defaults (ART's trainer, docs/reference/art-compat.md §1.7 and §3.4): CISPO (ppo false) with epsilon 1.0 and
 * epsilon_high 4.0; PPO with epsilon 0.2 and epsilon_high = epsilon; importance sampling per
 * token; scale_rewards true; advantage_balance 0; learning_rate 5e-6 (what ART's
 * `backend.train()` sends when the user sets nothing). The era-d names are aliases where they
 * overlap: `modelfamily_k2_tau` (the specification's neutral name) for `kimi_k2_tau`, `loss_fn`
 * for `ppo`, `normalize_advantages: false` forces `scale_rewards: false`.
 * `logprob_calculation_chunk_size` only bounds memory in ART; Hearth's engine always computes
 * logprobs in vocabulary chunks, so any value gives the same results and is accepted.
 *
 * Not here: validation of types and ranges (the zod schema), applying the settings (rl-steps.ts,
 * the engine).
 */
import type { ImportanceSamplingLevel, LossSpec, OptimizerConfig } from '../../engine/train/types';
import { InvalidInputError } from '../errors';

export const RL_DEFAULT_LEARNING_RATE = 5e-6;

/** ART / Unsloth RL optimizer: AdamW beta1 0.9, beta2 0.99, weight decay 0.1, max grad norm 0.1. */
export const RL_OPTIMIZER: OptimizerConfig = { beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.1 };

export type RlLossSpec = Extract<LossSpec, { kind: 'rl' }>;

export interface RlSettings {
  loss: RlLossSpec;
  learningRate: number;
  scaleRewards: boolean;
  /** In [-1, 1]: > 0 scales negative advantages by 1 - b, < 0 positive ones by 1 + b. */
  advantageBalance: number;
  precalculateLogprobs: boolean;
  trainWithoutLogprobs: boolean;
  /** Tokens per optimizer step; null: the trainer's budget. */
  packedSequenceLength: number | null;
  /** Per-step learning rate = learning_rate * (#trajectories in the step)^power. */
  lrMultiplierPower: number;
}

/** Keys Hearth does not implement, with the value that means "off". */
const REFUSED: Record<string, { off: unknown; why: string }> = {
  kl_penalty_coef: { off: 0, why: 'KL penalties against a reference policy are not implemented' },
  kl_penalty_reference_step: { off: undefined, why: 'KL penalties against a reference policy are not implemented' },
  kl_penalty_source: { off: undefined, why: 'KL penalties against a reference policy are not implemented' },
  kl_penalty_step_lag: { off: undefined, why: 'KL penalties against a reference policy are not implemented' },
  kl_ref_adapter_path: { off: undefined, why: 'KL penalties against a reference policy are not implemented' },
  truncated_importance_sampling: {
    off: undefined,
    why: 'truncated importance sampling against the original sampler logprobs is not implemented',
  },
  scale_learning_rate_by_reward_std_dev: { off: false, why: 'scaling the learning rate by the reward spread is not implemented' },
  plot_tensors: { off: false, why: 'Hearth does not plot training tensors' },
};

function refuse(key: string, value: unknown, message: string): never {
  throw new InvalidInputError(['body', 'experimental_config', key], message, value);
}

/** Checks and resolves `experimental_config` (nulls already dropped); throws a 422 for a refused setting. */
export function resolveRlSettings(config: Readonly<Record<string, unknown>>): RlSettings {
  const get = <T>(key: string): T | undefined => (config[key] ?? undefined) as T | undefined;
  for (const [key, { off, why }] of Object.entries(REFUSED)) {
    const value = get(key);
    if (value !== undefined && value !== off) {
      refuse(key, value, `experimental_config.${key} = ${JSON.stringify(value)} cannot be honoured: ${why} in Hearth. Leave it null.`);
    }
  }

  const ppoFlag = get<boolean>('ppo');
  const lossFn = get<'cispo' | 'ppo'>('loss_fn');
  if (ppoFlag !== undefined && lossFn !== undefined && ppoFlag !== (lossFn === 'ppo')) {
    refuse('loss_fn', lossFn, `experimental_config.loss_fn "${lossFn}" contradicts ppo = ${ppoFlag}; set one of them.`);
  }
  const ppo = ppoFlag ?? lossFn === 'ppo';

  const kimi = get<number>('kimi_k2_tau');
  const alias = get<number>('modelfamily_k2_tau');
  if (kimi !== undefined && alias !== undefined && kimi !== alias) {
    refuse('modelfamily_k2_tau', alias, 'kimi_k2_tau and modelfamily_k2_tau name the same setting; give it once.');
  }

  const epsilon = get<number>('epsilon') ?? (ppo ? 0.2 : 1.0);
  const epsilonHigh = get<number>('epsilon_high') ?? (ppo ? epsilon : 4.0);
  const normalize = get<boolean>('normalize_advantages');
  return {
    loss: {
      kind: 'rl',
      ppo,
      epsilon,
      epsilonHigh,
      importanceSamplingLevel: get<ImportanceSamplingLevel>('importance_sampling_level') ?? 'token',
      maskProbRatio: get<boolean>('mask_prob_ratio') ?? false,
      kimiK2Tau: kimi ?? alias ?? null,
      maxNegativeAdvantageImportanceSamplingWeight: get<number>('max_negative_advantage_importance_sampling_weight') ?? null,
    },
    learningRate: get<number>('learning_rate') ?? RL_DEFAULT_LEARNING_RATE,
    scaleRewards: normalize === false ? false : (get<boolean>('scale_rewards') ?? true),
    advantageBalance: get<number>('advantage_balance') ?? 0,
    precalculateLogprobs: get<boolean>('precalculate_logprobs') ?? false,
    trainWithoutLogprobs: get<boolean>('allow_training_without_logprobs') ?? false,
    packedSequenceLength: get<number>('packed_sequence_length') ?? null,
    lrMultiplierPower: get<number>('num_trajectories_learning_rate_multiplier_power') ?? 0,
  };
}
