/**
 * Hearth's Trainer: runs one RL or SFT job on the GPU training engine and stores the result as
 * the model's next checkpoint (a PEFT adapter), speaking ART's event protocol through the job
 * runner (docs/reference/art-compat.md §1.8, §1.10).
 *
 * A job: plan its optimizer steps from the input (rl-steps.ts / sft-steps.ts, with the base
 * model's tokenizer, chat template and length limit), announce `training_started{num_sequences}`,
 * start a session from the latest checkpoint's adapter (fresh PEFT init after step 0), then per
 * step: train, report `gradient_step` and save the adapter and optimizer state in the same
 * transaction, yield so chat requests are answered, and finally register the adapter as the
 * checkpoint at latest + 1. With nothing trainable the job still announces 0 sequences and
 * advances the step with a copy of the previous adapter (recent ART advances on skipped steps).
 *
 * Resuming: a job found RUNNING by a new host continues after its last saved step with the
 * saved adapter and optimizer state (the plan is deterministic in the job's id and input); if its
 * checkpoint was already stored, only the terminal event is left to emit (the runner does it).
 *
 * Not here: the math (engine/train), the queue and terminal events (runner.ts).
 */
import type { InferenceEngine, ServedModel } from '../../engine/generate/types';
import { tensorFromF32 } from '../../engine/tensor/tensor-data';
import { writeSafetensors } from '../../engine/model/files/safetensors-writer';
import type { TensorData } from '../../engine/tensor/tensor-data';
import { loraToTensors, planLora, loraParameterCount } from '../../engine/train/lora-plan';
import {
  MAX_TRAINING_SEQUENCE_TOKENS,
  type LossSpec,
  type OptimizerConfig,
  type StepMetrics,
  type TrainingEngine,
  type TrainingSequence,
  type TrainingSession,
} from '../../engine/train/types';
import { adapterFiles, engineLoraConfig, optimizerBytes, optimizerFromBytes, readTensors } from '../adapters/peft-files';
import type { ConversationTokenizer } from './conversation-tokens';
import { resolveRlSettings, RL_OPTIMIZER } from './rl-config';
import { planRlSteps, RL_STEP_TOKENS } from './rl-steps';
import { seedOf } from './seeded';
import { planSftSteps, SFT_OPTIMIZER } from './sft-steps';
import type { StepProgress, Trainer, TrainerContext } from './trainer';

export interface LoraTrainerDeps {
  /** The inference engine: the base model's tokenizer, chat template, EOS ids and length limit. */
  inference(): Promise<InferenceEngine>;
  /** The GPU training engine (sharing the inference engine's device and base weights). */
  training(): Promise<TrainingEngine>;
  /** Tokens per RL optimizer step when the job does not set packed_sequence_length. */
  stepTokens?: number;
  /**
   * The longest sequence the training engine takes (default MAX_TRAINING_SEQUENCE_TOKENS, its
   * micro-batch): longer RL sequences are cut, longer SFT examples dropped, as for the model's context.
   */
  maxSequenceTokens?: number;
  /** Runs between optimizer steps; the default yields to the event loop so queued chat requests run. */
  yieldBetweenSteps?(): Promise<void>;
}

/** One optimizer step of a job's plan. */
interface PlannedStep {
  sequences: TrainingSequence[];
  learningRate: number;
  numTrajectories: number;
}

interface JobPlan {
  steps: PlannedStep[];
  loss: LossSpec;
  optimizer: OptimizerConfig;
  precalculateLogprobs: boolean;
  /** Extra training_started data: RL's count of Choices not reproduced exactly (issue 16). */
  started: Record<string, number>;
}

export class LoraTrainer implements Trainer {
  readonly resumesInterruptedJobs = true;

  constructor(private readonly deps: LoraTrainerDeps) {}

  async train(ctx: TrainerContext): Promise<void> {
    // The previous host stored the checkpoint: only training_ended was missing.
    if (ctx.savedProgress?.checkpointStep != null) return;
    const served = await (await this.deps.inference()).loadModel(ctx.model.baseModel, { signal: ctx.signal });
    const plan = await this.plan(ctx, served);
    const lora = engineLoraConfig(ctx.model.lora);
    await ctx.started(plan.steps.length, plan.started);

    if (plan.steps.length === 0) {
      const previous = await this.previousAdapter(ctx);
      const tensors =
        previous ?? loraToTensors(planLora(served.config, lora), new Float32Array(loraParameterCount(planLora(served.config, lora))));
      await ctx.registerCheckpoint(adapterFiles(ctx.model.baseModel, lora, tensors));
      return;
    }

    const saved = ctx.savedProgress;
    const session = await (
      await this.deps.training()
    ).startSession({
      baseModel: ctx.model.baseModel,
      lora,
      initialAdapter: saved ? await readTensors(new Uint8Array(saved.adapter), 'saved adapter') : await this.previousAdapter(ctx),
      optimizerState: saved ? await optimizerFromBytes(new Uint8Array(saved.optimizer), saved.optimizerStep) : null,
      optimizer: plan.optimizer,
      seed: seedOf(ctx.job.id),
    });
    try {
      const precomputed = plan.precalculateLogprobs
        ? await this.precalculate(session, plan.steps, saved?.precomputed ?? null, ctx.signal)
        : null;
      for (let i = saved?.stepsDone ?? 0; i < plan.steps.length; i++) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        const step = plan.steps[i];
        const metrics = await session.step(step.sequences, plan.loss, step.learningRate, ctx.signal);
        if (!Number.isFinite(metrics.loss) || !Number.isFinite(metrics.gradNorm)) {
          throw new Error(
            `Training diverged at step ${i + 1} of ${plan.steps.length}: the loss is ${metrics.loss} and the gradient norm ${metrics.gradNorm}. Lower the learning rate.`,
          );
        }
        const optimizer = await session.exportOptimizerState();
        const progress: StepProgress = {
          stepsDone: i + 1,
          adapter: bufferOf(adapterFiles(ctx.model.baseModel, lora, await session.exportAdapter()).adapterModel),
          optimizer: bufferOf(optimizerBytes(optimizer)),
          optimizerStep: optimizer.step,
          precomputed,
        };
        await ctx.gradientStep(stepData(metrics, step, plan.loss), progress);
        await (this.deps.yieldBetweenSteps?.() ?? new Promise<void>((resolve) => setTimeout(resolve, 0)));
      }
      await ctx.registerCheckpoint(adapterFiles(ctx.model.baseModel, lora, await session.exportAdapter()));
    } finally {
      session.dispose();
    }
  }

  /** The job's optimizer steps, the same on every host (seeded by the job id). */
  private async plan(ctx: TrainerContext, served: ServedModel): Promise<JobPlan> {
    const input = ctx.input;
    const maxLength = Math.min(served.maxModelLen, this.deps.maxSequenceTokens ?? MAX_TRAINING_SEQUENCE_TOKENS);
    const tokenizer = (tools: boolean): ConversationTokenizer => ({
      tokenizer: served.tokenizer,
      template: served.chatTemplates.forRequest({ hasTools: tools }),
      eosTokenIds: served.eosTokenIds,
    });
    if (input.kind === 'rl') {
      const settings = resolveRlSettings(input.experimentalConfig);
      const rl = planRlSteps(input.trajectoryGroups, {
        settings,
        model: served,
        maxLength,
        stepTokens: this.deps.stepTokens ?? RL_STEP_TOKENS,
        seed: ctx.job.id,
      });
      return {
        steps: rl.steps,
        loss: settings.loss,
        optimizer: RL_OPTIMIZER,
        precalculateLogprobs: settings.precalculateLogprobs,
        started: { num_choices_not_reproduced: rl.numChoicesNotReproduced },
      };
    }
    const examples = await ctx.loadSftExamples();
    const steps = planSftSteps(examples, {
      tokenizer: tokenizer(examples.some((e) => (e.tools?.length ?? 0) > 0)),
      maxLength,
      batchSize: input.batchSize,
      learningRate: input.learningRate,
      assistantTurns: input.assistantTurns,
    });
    return {
      steps: steps.map((s) => ({ sequences: s.sequences, learningRate: s.learningRate, numTrajectories: s.sequences.length })),
      loss: { kind: 'sft' },
      optimizer: SFT_OPTIMIZER,
      precalculateLogprobs: false,
      started: {},
    };
  }

  /** The latest checkpoint's adapter tensors; null for the step-0 identity adapter. */
  private async previousAdapter(ctx: TrainerContext): Promise<TensorData[] | null> {
    const latest = ctx.latestCheckpoint;
    if (!latest || latest.files.length === 0) return null;
    const files = await ctx.readAdapter(latest.step);
    return files ? readTensors(files.adapterModel, `checkpoint step ${latest.step}`) : null;
  }

  /**
   * precalculate_logprobs: the current policy's logprobs of every planned target replace the
   * sampler's (ART keeps the step exactly on-policy). Computed once before step 1 and saved with
   * the progress, so a resumed job uses the same values.
   */
  private async precalculate(
    session: TrainingSession,
    steps: PlannedStep[],
    saved: ArrayBuffer | null,
    signal: AbortSignal,
  ): Promise<ArrayBuffer> {
    const sequences = steps.flatMap((s) => s.sequences);
    let values: Float32Array[];
    if (saved) {
      const tensors = await readTensors(new Uint8Array(saved), 'precomputed logprobs');
      values = tensors.map((t) => new Float32Array(t.data.slice().buffer));
    } else {
      values = await session.logprobs(sequences, signal);
    }
    sequences.forEach((seq, k) => {
      const old = seq.oldLogprobs ?? new Float32Array(seq.tokens.length).fill(NaN);
      for (let i = 0; i < seq.tokens.length; i++) if (seq.trainable[i]) old[i] = values[k][i];
      seq.oldLogprobs = old;
    });
    if (saved) return saved;
    const tensors = values.map((v, k) => tensorFromF32(`sequence.${k}`, [v.length], v, 'f32'));
    return bufferOf(writeSafetensors(tensors));
  }
}

function bufferOf(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}

/** gradient_step data: flat finite numbers only (ART does float(v) on each). */
function stepData(m: StepMetrics, step: PlannedStep, loss: LossSpec): Record<string, number> {
  const data: Record<string, number> = {
    loss: m.loss,
    grad_norm: m.gradNorm,
    learning_rate: m.learningRate,
    num_trainable_tokens: m.numTrainableTokens,
    num_tokens: m.numTokens,
    tokens_per_second: Number.isFinite(m.tokensPerSecond) ? m.tokensPerSecond : 0,
    num_trajectories: step.numTrajectories,
  };
  if (loss.kind === 'rl') data.policy_loss = m.policyLoss ?? m.loss;
  // How far the trainer's policy is from the sampler's on the step's tokens (issue 16).
  if (m.maxRatioDeviation !== undefined && Number.isFinite(m.maxRatioDeviation)) data.max_ratio_deviation = m.maxRatioDeviation;
  if (m.entropy !== undefined && Number.isFinite(m.entropy)) data.entropy = m.entropy;
  return data;
}
