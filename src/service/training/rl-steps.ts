/**
 * An RL job's trajectory groups turned into optimizer steps, exactly as ART prepares them
 * (docs/reference/art-compat.md §3.1, §3.3):
 *
 * 1. Per group: A_i = r_i - mean(r), divided by (population std + 1e-6) with scale_rewards.
 *    Trajectories with A_i == 0 are dropped (a group whose rewards are all equal teaches nothing).
 * 2. Each remaining trajectory's histories are tokenised (rl-histories.ts); every target token
 *    gets the trajectory's advantage and weight w = 1 / (#target tokens of the trajectory + 1e-6).
 * 3. Over all target tokens of the job: w_t <- w_t / mean(w); advantage_balance b scales negative
 *    advantages by 1 - b (b > 0) or positive ones by 1 + b (b < 0); A_t <- A_t / mean(|A_t| w_t).
 * 4. Sequences are packed first-fit, in order, into steps of at most `stepTokens` tokens (a longer
 *    sequence is cut to that length, as ART truncates), and the steps are shuffled with a seed
 *    derived from the job, so a resumed job replays the same plan. One step = one optimizer step
 *    = one `num_sequences` unit.
 *
 * Not here: the loss (the engine), tokenisation details (conversation-tokens.ts).
 */
import type { TrainingSequence } from '../../engine/train/types';
import type { TrajectoryGroupInput } from './job-input';
import type { TokenizedConversation } from './conversation-tokens';
import type { RlSettings } from './rl-config';
import { tokenizeHistory, type HistoryInput, type SamplingModel } from './rl-histories';
import { seededShuffle } from './seeded';

/** Tokens per RL optimizer step unless packed_sequence_length says otherwise (ART's row length). */
export const RL_STEP_TOKENS = 2048;

/** A_i per trajectory of one group: reward minus the group mean, scaled by its spread. */
export function groupAdvantages(rewards: readonly number[], scaleRewards: boolean): number[] {
  const n = rewards.length;
  if (n === 0) return [];
  const mean = rewards.reduce((s, r) => s + r, 0) / n;
  const std = Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / n);
  return rewards.map((r) => (scaleRewards ? (r - mean) / (std + 1e-6) : r - mean));
}

export interface RlStep {
  sequences: TrainingSequence[];
  /** Distinct trajectories with a sequence in this step. */
  numTrajectories: number;
  learningRate: number;
}

export interface RlPlan {
  steps: RlStep[];
  numGroups: number;
  /** Groups whose rewards are not all equal. */
  numGroupsTrainable: number;
  numTrajectories: number;
  /** Trajectories left after the zero-advantage drop that had trainable tokens. */
  numTrajectoriesTrained: number;
  numTrainableTokens: number;
  /** Trainable Choices of the trained trajectories whose sampled tokens were re-encoded from text (rl-histories.ts). */
  numChoicesNotReproduced: number;
}

interface PlannedSequence {
  trajectory: number;
  seq: TokenizedConversation;
  advantage: number;
  weight: number;
}

export interface RlPlanOptions {
  settings: RlSettings;
  /** The served model the trajectories were sampled from: its prompt rendering and end tokens. */
  model: SamplingModel;
  /** The model's longest sequence (ServedModel.maxModelLen). */
  maxLength: number;
  /** Default tokens per step when packed_sequence_length is unset. */
  stepTokens?: number;
  /** Seeds the step order (the job id). */
  seed: string;
}

export function planRlSteps(groups: readonly TrajectoryGroupInput[], opts: RlPlanOptions): RlPlan {
  const { settings } = opts;
  const budget = Math.min(settings.packedSequenceLength ?? opts.stepTokens ?? RL_STEP_TOKENS, opts.maxLength);
  const planned: PlannedSequence[] = [];
  let numTrajectories = 0;
  let numGroupsTrainable = 0;
  let trajectoryId = 0;
  let numChoicesNotReproduced = 0;
  for (const group of groups) {
    const trajectories = group.trajectories;
    numTrajectories += trajectories.length;
    const advantages = groupAdvantages(
      trajectories.map((t) => t.reward),
      settings.scaleRewards,
    );
    if (advantages.some((a) => a !== 0)) numGroupsTrainable++;
    trajectories.forEach((trajectory, i) => {
      if (advantages[i] === 0) return;
      const histories = [trajectory as unknown as HistoryInput, ...((trajectory.additional_histories ?? []) as HistoryInput[])];
      const tokenized = histories.map((h, k) =>
        // Additional histories inherit the trajectory's tools when they bring none.
        tokenizeHistory(k > 0 && h.tools == null ? { ...h, tools: (trajectory.tools as unknown[] | null) ?? null } : h, opts.model, {
          trainWithoutLogprobs: settings.trainWithoutLogprobs,
        }),
      );
      const seqs = tokenized.flatMap((t) => t.sequences);
      const cut = seqs.map((s) => truncate(s, budget)).filter((s) => s.trainable.some((m) => m === 1));
      const targets = cut.reduce((n, s) => n + s.trainable.reduce((a, m) => a + m, 0), 0);
      if (targets === 0) return;
      numChoicesNotReproduced += tokenized.reduce((n, t) => n + t.notReproduced, 0);
      const id = trajectoryId++;
      for (const seq of cut) planned.push({ trajectory: id, seq, advantage: advantages[i], weight: 1 / (targets + 1e-6) });
    });
  }
  const sequences = normalise(planned, settings.advantageBalance);
  const steps = pack(sequences, budget).map((rows) => {
    const ids = new Set(rows.map((r) => planned[r].trajectory));
    return {
      sequences: rows.map((r) => sequences[r]),
      numTrajectories: ids.size,
      learningRate: settings.learningRate * ids.size ** settings.lrMultiplierPower,
    };
  });
  return {
    steps: seededShuffle(steps, opts.seed),
    numGroups: groups.length,
    numGroupsTrainable,
    numTrajectories,
    numTrajectoriesTrained: trajectoryId,
    numTrainableTokens: sequences.reduce((n, s) => n + s.trainable.reduce((a, m) => a + m, 0), 0),
    numChoicesNotReproduced,
  };
}

function truncate(seq: TokenizedConversation, length: number): TokenizedConversation {
  if (seq.tokens.length <= length) return seq;
  return { tokens: seq.tokens.slice(0, length), trainable: seq.trainable.slice(0, length), logprobs: seq.logprobs.slice(0, length) };
}

/** Step 3 of the header: per-token weights and advantages normalised over the whole job. */
function normalise(planned: readonly PlannedSequence[], balance: number): TrainingSequence[] {
  let count = 0;
  let weightSum = 0;
  for (const p of planned) {
    const m = p.seq.trainable.reduce((a, b) => a + b, 0);
    count += m;
    weightSum += m * p.weight;
  }
  const meanWeight = count > 0 ? weightSum / count : 1;
  const balanced = (a: number) => (balance > 0 && a < 0 ? a * (1 - balance) : balance < 0 && a > 0 ? a * (1 + balance) : a);
  let absSum = 0;
  for (const p of planned) {
    const m = p.seq.trainable.reduce((a, b) => a + b, 0);
    absSum += m * Math.abs(balanced(p.advantage)) * (p.weight / meanWeight);
  }
  const meanAbs = count > 0 ? absSum / count : 0;
  return planned.map((p) => {
    const n = p.seq.tokens.length;
    const advantage = meanAbs > 0 ? balanced(p.advantage) / meanAbs : 0;
    const weight = p.weight / meanWeight;
    const trainable = Uint8Array.from(p.seq.trainable);
    return {
      tokens: Uint32Array.from(p.seq.tokens),
      trainable,
      oldLogprobs: Float32Array.from(p.seq.logprobs, (v, i) => (trainable[i] ? v : NaN)),
      advantages: Float32Array.from({ length: n }, (_, i) => (trainable[i] ? advantage : 0)),
      weights: Float32Array.from({ length: n }, (_, i) => (trainable[i] ? weight : 0)),
    };
  });
}

/** First-fit packing in order: step index lists of sequence indices. */
function pack(sequences: readonly TrainingSequence[], budget: number): number[][] {
  const rows: { used: number; items: number[] }[] = [];
  sequences.forEach((s, i) => {
    const len = s.tokens.length;
    const row = rows.find((r) => r.used + len <= budget);
    if (row) {
      row.used += len;
      row.items.push(i);
    } else {
      rows.push({ used: len, items: [i] });
    }
  });
  return rows.map((r) => r.items);
}
